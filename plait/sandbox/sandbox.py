"""`JsSandbox`: evaluate user JavaScript in locked-down QuickJS contexts, in evaluator processes
that can be killed, shared fairly by runs.

How an evaluation runs: the expression is syntax-checked once here (`check_syntax`, cached), then
sent with its scope (one JSON string) to an evaluator process (`_child.py`), in one frame
(`_protocol.py`). There it is compiled once per context into a frozen function and called by
the context's runner, which parses and deep-freezes the values, calls the function and returns
the result as JSON (see `_prelude.py`); its microtasks then run under the same deadline. The
reply comes back in one frame. No JavaScript runs in Plait's own process: an event loop that
asks (`aevaluate`) writes the frame and is woken by the reply, like any socket; a thread that
asks (`evaluate`) reads the reply itself. One exception, asked for explicitly: `plain_value`
computes an expression that only reads its scope (`plain.py`: paths, object and array literals,
`+`, `-`, comparisons) in Python, after the same checks, when its value is certainly what a
process would answer; the engine asks it first for TRANSFORM and CONDITION nodes.

Evaluator processes are places in a pool shared fairly by owners (`_pool.py`): every call names
its `owner` (the engine passes the root run's id, so a run and its child runs count as one), one
owner cannot hold more than its share while another waits, and the pool grows for waiting
owners. A place serves one evaluation at a time.

What is guaranteed, and the tests that hold it (tests/sandbox/):

- Isolation: strict mode, no host objects, frozen intrinsics and global object, deep-frozen
  values in and JSON out; nothing one evaluation does is visible to the next, even in the same
  context (`test_sandbox_hostile.py`). Every reply repeats its request's id, and a process that
  answers out of step is killed: a result only reaches the evaluation that asked for it.
- Time, on the wall clock: an evaluation ends within `timeout_s` plus `KILL_GRACE_S`, whatever
  builtin it calls (`test_sandbox_builtins.py`). QuickJS interrupts ordinary runaways itself;
  the supervisor kills the process of one that passes its deadline (a string search QuickJS
  cannot interrupt, a host too loaded to run the process), and the place gets a new process.
  `timeout_s` is at most plait.toml `[sandbox] max_timeout_s` (`limits.py`); a larger,
  non-finite or non-positive value is refused.
- Memory: `max_memory_mb` bounds all the memory of a context, ArrayBuffers included; going over
  is a `JsMemoryError` and the context is replaced, so no evaluation fails for memory another
  left behind (`test_sandbox_memory.py`). The process has an address-space limit besides.
- Nesting: a scope, argument or result nested deeper than `plait.model.limits.MAX_DEPTH` is
  refused with an error naming the limit.
- Cancelling the task awaiting `aevaluate`/`acall` returns at once and frees its place at once:
  a queued evaluation is withdrawn, a running one has its process killed.
- A process that dies on its own (not killed for a deadline or a cancel) fails nothing the
  first time: evaluations have no effects, so the one it was running is sent again, once, to
  a new process; a second death fails it, naming how the process ended.
- `close()` refuses new and queued requests and does not wait for running ones (each ends
  within its limit); no evaluator process outlives Plait's (`_child.py`).
- `wait_s` (optional) bounds how long a request waits for a place (`JsBusyError` after it):
  readers that migrate stored outputs use it, so a queue of them cannot wait without end.

Importing this package does not load QuickJS: Plait's process never evaluates JavaScript, and
parses it (`check_syntax`) only when asked. What each step costs is measured in
docs/performance.md, "The JavaScript sandbox".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import weakref
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

from plait.model.limits import MAX_DEPTH
from plait.sandbox import _protocol as wire
from plait.sandbox._context import RUNTIME_LINES
from plait.sandbox._evaluator import Evaluator
from plait.sandbox._pool import FairPool, Ticket
from plait.sandbox._process import ProcessGone
from plait.sandbox.errors import JsBusyError, JsMemoryError, JsRuntimeError, JsTimeoutError, SandboxError
from plait.sandbox.limits import max_timeout_s as configured_max_timeout_s
from plait.sandbox.limits import timeout_problem
from plait.sandbox.plain import plain_expression
from plait.sandbox.syntax import check_syntax, code_function

ATTEMPTS = 2
"""Tries of an evaluation whose process died on its own (see the module docstring)."""

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_RESERVED_WORDS = (
    "arguments await break case catch class const continue debugger default delete do else enum eval export "
    "extends false finally for function if implements import in instanceof interface let new null package "
    "private protected public return static super switch this throw true try typeof var void while with yield"
)
_RESERVED = frozenset(_RESERVED_WORDS.split())
_FRAME = re.compile(r"<input>:(\d+):(\d+)")
_NAMES: dict[tuple[str, ...], str] = {}
"""Scope names already checked, and how they are sent."""


class JsSandbox:
    """Runs user JavaScript: no host objects, strict mode, frozen intrinsics, a wall-clock time
    limit and a memory limit per evaluation, JSON in and JSON out, in processes that can be
    killed. The guarantees are in this module's docstring.

    A context manager; `close()` is idempotent."""

    def __init__(
        self,
        *,
        timeout_s: float = 1.0,
        max_memory_mb: int = 64,
        max_output_bytes: int = 1_000_000,
        workers: int = 2,
        max_workers: int | None = None,
        max_timeout_s: float | None = None,
        wait_s: float | None = None,
    ) -> None:
        """`workers` processes serve one owner at most; up to `max_workers` (default twice as
        many) when several owners wait. `max_timeout_s` defaults to the configured cap. `wait_s`:
        the longest a request waits for a process (None: until one is free)."""
        cap = configured_max_timeout_s() if max_timeout_s is None else max_timeout_s
        if not (math.isfinite(cap) and cap > 0) or workers <= 0 or max_memory_mb <= 0 or max_output_bytes <= 0:
            raise ValueError("max_timeout_s, workers, max_memory_mb and max_output_bytes must be positive")
        if not (math.isfinite(timeout_s) and 0 < timeout_s <= cap):
            raise ValueError(f"timeout_s must be positive and at most max_timeout_s ({cap} s)")
        if wait_s is not None and not (math.isfinite(wait_s) and wait_s > 0):
            raise ValueError("wait_s must be a positive number of seconds, or None")
        self.timeout_s = timeout_s
        self.max_timeout_s = cap
        self.max_memory_mb = max_memory_mb
        self.max_output_bytes = max_output_bytes
        self.wait_s = wait_s
        maximum = max(max_workers if max_workers is not None else 2 * workers, workers)
        self._pool: FairPool[Evaluator] = FairPool(lambda: Evaluator(max_memory_mb), base=workers, maximum=maximum)
        self._retire = weakref.finalize(self, _retire, self._pool)
        """Retires the processes on `close()`, or when the sandbox is dropped unclosed."""
        self._in_flight = 0
        """Async requests holding a place now (a quick reply is looked for only when one does)."""
        self._closed = False

    # --- public API ---------------------------------------------------------------------------

    def evaluate(
        self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """The JSON value of `expression`, with each `scope` name bound to a deep-frozen copy of
        its value. `undefined` becomes None."""
        names, payload = _scope(scope)
        return self._request(wire.EVALUATE, expression, names, payload, timeout_s, owner)

    def call(
        self, function_expression: str, *args: Any, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """Evaluate `function_expression` (`old => ({...old})`) and call it with deep-frozen
        copies of `args`; the JSON value it returns."""
        return self._request(wire.CALL, function_expression, "", _json(list(args), "arguments"), timeout_s, owner)

    def plain_value(
        self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None
    ) -> tuple[Any] | None:
        """`(value,)` of `expression` when it is plain (`plain.py`: it only reads its scope) and
        its value here is certainly what an evaluator process would answer; computed in this
        process, after the checks an evaluation makes first (so with the same errors: a closed
        sandbox, `timeout_s` over the cap, a syntax error, a scope that is not JSON). None: ask a
        process (`evaluate`, `aevaluate`). What the engine evaluates first, for TRANSFORM and
        CONDITION nodes; a caller that wants every expression in a process never calls it."""
        compiled = plain_expression(expression)
        if compiled is None:
            return None
        payload = _scope(scope)[1]
        self._limit(wire.EVALUATE, expression, timeout_s)
        return compiled.value(scope, payload, self.max_output_bytes)

    async def aevaluate(
        self,
        expression: str,
        scope: Mapping[str, Any],
        *,
        timeout_s: float | None = None,
        owner: str | None = None,
        ahead: bool = False,
    ) -> Any:
        """`evaluate` without blocking the event loop (the scope is copied before the first await).
        `ahead`: the caller evaluates before it needs the value and has other work for the loop
        meanwhile, so the loop is never held looking for a quick reply."""
        names, payload = _scope(scope)
        return await self._arequest(wire.EVALUATE, expression, names, payload, timeout_s, owner, ahead=ahead)

    async def acall(
        self, function_expression: str, *args: Any, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """`call` without blocking the event loop."""
        payload = _json(list(args), "arguments")
        return await self._arequest(wire.CALL, function_expression, "", payload, timeout_s, owner)

    async def acall_code(self, body: str, *args: Any, timeout_s: float | None = None, owner: str | None = None) -> Any:
        """Run a CODE node's `body` (see `code_function`) with `args` (input, nodes, current);
        an error's line and column point into `body` itself."""
        try:
            return await self.acall(code_function(body), *args, timeout_s=timeout_s, owner=owner)
        except JsRuntimeError as exc:
            if exc.line is None or exc.line < 2:
                raise
            raise JsRuntimeError(exc.message, exc.line - 1, exc.column) from None

    def close(self) -> None:
        """Refuse queued and later requests; running evaluations end within their limits, and
        then their processes end."""
        self._closed = True
        self._retire()

    def child_pids(self) -> list[int]:
        """The process ids of the evaluators running now (for tests and diagnostics)."""
        return [pid for evaluator in self._pool.items() if (pid := evaluator.pid) is not None]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- requests -----------------------------------------------------------------------------

    def _limit(self, op: int, source: str, timeout_s: float | None) -> float:
        """The time limit, checked against the cap; and the source's syntax. Nothing unchecked
        reaches a process."""
        if self._closed:
            raise SandboxError("the sandbox is closed")
        limit = self.timeout_s if timeout_s is None else timeout_s
        problem = timeout_problem(limit, self.max_timeout_s)
        if problem is not None:
            raise SandboxError(problem)
        check_syntax(source, kind="expression" if op == wire.EVALUATE else "function")
        return float(limit)

    def _request(
        self, op: int, source: str, names: str, payload: bytes, timeout_s: float | None, owner: str | None
    ) -> Any:
        limit = self._limit(op, source, timeout_s)
        ticket = self._pool.request(owner)
        try:
            if not self._pool.wait(ticket, self.wait_s):
                raise self._busy()
        except BaseException:
            self._pool.withdraw(ticket)
            raise
        evaluator = self._take(ticket)
        try:
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    reply = evaluator.request_sync(op, limit, self.max_output_bytes, source, names, payload)
                    break
                except ProcessGone as gone:
                    self._after_gone(evaluator, gone, attempt, limit)
        finally:
            self._give_back(evaluator, owner)
        return self._answer(reply, limit)

    async def _arequest(
        self,
        op: int,
        source: str,
        names: str,
        payload: bytes,
        timeout_s: float | None,
        owner: str | None,
        *,
        ahead: bool = False,
    ) -> Any:
        limit = self._limit(op, source, timeout_s)
        ticket = self._pool.request(owner)
        if not ticket.done:
            await self._turn(ticket)
        evaluator = self._take(ticket)
        self._in_flight += 1
        try:
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    alone = self._in_flight == 1 and not ahead
                    reply = await evaluator.request_async(
                        op, limit, self.max_output_bytes, source, names, payload, alone=alone
                    )
                    break
                except ProcessGone as gone:
                    self._after_gone(evaluator, gone, attempt, limit)
        finally:
            self._in_flight -= 1
            self._give_back(evaluator, owner)
        return self._answer(reply, limit)

    async def _turn(self, ticket: Ticket[Evaluator]) -> None:
        """Wait for the ticket without blocking the loop (within `wait_s`)."""
        loop = asyncio.get_running_loop()
        granted: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if _running_loop() is loop:  # given back on this loop: no need to wake it up
                loop.call_soon(_resolve, granted)
                return
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_resolve, granted)

        if not self._pool.when_done(ticket, wake):
            return
        try:
            await asyncio.wait_for(granted, self.wait_s)
        except TimeoutError:
            self._pool.withdraw(ticket)
            raise self._busy() from None
        except BaseException:
            self._pool.withdraw(ticket)
            raise

    def _take(self, ticket: Ticket[Evaluator]) -> Evaluator:
        if ticket.error is not None:
            raise ticket.error
        evaluator = ticket.item
        assert evaluator is not None
        evaluator.busy = True
        return evaluator

    def _give_back(self, evaluator: Evaluator, owner: str | None) -> None:
        """The place is free again: a dead process is replaced in the background."""
        evaluator.busy = False
        evaluator.after()
        surplus = self._pool.release(evaluator, owner)
        if surplus is not None:
            surplus.stop()

    def _after_gone(self, evaluator: Evaluator, gone: ProcessGone, attempt: int, limit: float) -> None:
        """The process ended during the request: its place takes another, and the request is sent
        again only after a death nobody asked for (else this raises what the caller sees)."""
        evaluator.after()
        if gone.reason != "crashed" or attempt >= ATTEMPTS or self._closed:
            raise self._gone(gone, limit) from None

    def _busy(self) -> JsBusyError:
        return JsBusyError(
            f"every JavaScript evaluator stayed busy for {self.wait_s:g} s (other runs' expressions); try again"
        )

    def _gone(self, gone: ProcessGone, limit: float) -> SandboxError:
        if gone.reason == "deadline":
            return JsTimeoutError(f"expression exceeded {limit:g} s")
        if gone.reason == "startup":
            return SandboxError("the JavaScript evaluator process did not start; see the server's resources")
        return JsRuntimeError(
            f"the JavaScript evaluator process ended during the evaluation ({gone.detail or gone.reason}), "
            f"twice; a new process serves the next one"
        )

    # --- results ------------------------------------------------------------------------------

    def _answer(self, reply: tuple[int, int, bytes], limit: float) -> Any:
        _, status, body = reply
        if status == wire.OK:
            if len(body) > self.max_output_bytes:
                raise JsRuntimeError(f"the result is larger than the limit of {self.max_output_bytes} bytes")
            return json.loads(body)
        if status == wire.THROWN:
            info = json.loads(body)
            line, column = _position(str(info.get("stack", "")))
            name, message = str(info.get("name", "Error")), str(info.get("message", ""))
            text = f"threw {message}" if name == "thrown value" else f"{name}: {message}"
            raise JsRuntimeError(text, line, column)
        if status == wire.TIMEOUT:
            raise JsTimeoutError(f"expression exceeded {limit:g} s")
        if status in (wire.MEMORY, wire.MEMORY_NULL):
            message = f"expression exceeded the memory limit of {self.max_memory_mb} MB"
            if status == wire.MEMORY_NULL:
                message += " (QuickJS threw null, as it does when it cannot allocate an error;"
                message += " to throw, throw an Error)"
            raise JsMemoryError(message)
        detail = body.decode("utf-8", wire.TEXT)
        if status == wire.FAILED:
            raise JsRuntimeError(detail)
        raise JsRuntimeError(f"the JavaScript evaluator could not evaluate it: {detail}")


def _retire(pool: FairPool[Evaluator]) -> None:
    for evaluator in pool.close():
        evaluator.stop()


# --- values in --------------------------------------------------------------------------------


def _scope(scope: Mapping[str, Any]) -> tuple[str, bytes]:
    """The names (comma-separated, as sent) and the JSON array of their values."""
    names = tuple(scope)
    joined = _NAMES.get(names)
    if joined is None:
        for name in names:
            if not isinstance(name, str) or not _IDENTIFIER.match(name) or name in _RESERVED:
                raise SandboxError(f"scope name {name!r} is not a usable JavaScript identifier")
        joined = ",".join(names)
        if len(_NAMES) < 1024:  # the engine's few sets of names, checked once each
            _NAMES[names] = joined
    return joined, _json([scope[name] for name in names], "scope")


_SENT = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_SENT_ASCII = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode
"""`json.dumps` with these options, without a new encoder per call (`dumps` builds one for any option)."""


def _json(value: Any, what: str) -> bytes:
    """`value` as UTF-8 JSON, as it is sent."""
    try:
        text = _SENT(value)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: only escaped can it reach QuickJS
            return _SENT_ASCII(value).encode("ascii")
    except (TypeError, ValueError) as exc:
        raise SandboxError(f"the {what} is not JSON: {exc}") from None
    except RecursionError:  # far deeper than the limit the runner checks (see _prelude.py)
        raise SandboxError(_too_deep(what)) from None


def _too_deep(what: str) -> str:
    verb = "are" if what.endswith("s") else "is"
    return f"the {what} {verb} nested deeper than the limit of {MAX_DEPTH} levels; flatten it before passing it"


def _position(stack: str) -> tuple[int | None, int | None]:
    """The innermost frame in the user's text: line 1 of the compiled script is the wrapper,
    and frames at `RUNTIME_LINES` and beyond are the runner's."""
    for match in _FRAME.finditer(stack):
        line, column = int(match.group(1)), int(match.group(2))
        if 2 <= line < RUNTIME_LINES:
            return line - 1, column
    return None, None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


__all__ = ["JsSandbox"]
