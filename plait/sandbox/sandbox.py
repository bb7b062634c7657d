"""`JsSandbox`: evaluate user JavaScript in locked-down QuickJS contexts, shared fairly by runs.

How an evaluation runs: the expression is syntax-checked once (`check_syntax`, cached), compiled
once per context into a frozen function, and called by the context's runner with the scope as
one JSON string. The runner parses and deep-freezes the values, calls the function and returns
the result as JSON (see `_prelude.py`); its microtasks then run under the same deadline.

An expression is first tried on the calling thread, in that thread's own context, with a budget
of `QUICK_S` (5 ms of CPU) and `QUICK_MEMORY_MB`: nearly all finish in microseconds there. One that needs longer is
evaluated again from the start (it can have had no effect) on a *slot*: a thread with a context
of its own, evaluating one expression at a time, under the whole time limit. Runs share the
slots fairly (`_pool.py`): every call names its `owner` (the run id), one run cannot hold more
than its share while another waits, and the pool grows for waiting owners. So a spinning
expression holds the event loop 5 ms, then a slot until its limit; a memory bomb takes 16 MB on
the calling thread, then up to `max_memory_mb` in a slot.

What is guaranteed, and the tests that hold it (tests/sandbox/):

- Isolation: strict mode, no host objects, frozen intrinsics and global object, deep-frozen
  values in and JSON out; nothing one evaluation does is visible to the next, even in the same
  context (`test_sandbox_hostile.py`).
- Time: each evaluation is stopped at its limit, microtasks included (`_context.py`);
  `timeout_s` is at most plait.toml `[sandbox] max_timeout_s` (`limits.py`), and a larger,
  non-finite or non-positive value is refused. A context that was stopped is replaced.
- Memory: `max_memory_mb` bounds all the memory of a context, ArrayBuffers included; going over
  is a `JsMemoryError` and the context is replaced, so no evaluation fails for memory another
  left behind (`test_sandbox_memory.py`).
- Nesting: a scope, argument or result nested deeper than `plait.model.limits.MAX_DEPTH` is
  refused with an error naming the limit.
- Cancelling the task awaiting `aevaluate`/`acall` returns at once; the evaluation it started
  still ends within its time limit, and only then is its slot given to another request.
- `close()` refuses new requests and does not wait for running ones (each ends within its limit).

Importing this package does not load QuickJS: `quickjs` is imported when the first context is
created. What each step costs is measured in docs/performance.md, "The JavaScript sandbox".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
import queue
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from concurrent.futures import Future
from types import TracebackType
from typing import Any, Self

from plait.model.limits import MAX_DEPTH
from plait.sandbox._context import RUNTIME_LINES, Answer, Context, ContextFailed, Interrupted, Kind, OutOfMemory
from plait.sandbox._pool import FairPool, Ticket
from plait.sandbox.errors import JsMemoryError, JsRuntimeError, JsTimeoutError, SandboxError
from plait.sandbox.limits import max_timeout_s as configured_max_timeout_s
from plait.sandbox.limits import timeout_problem
from plait.sandbox.syntax import check_syntax, code_function

QUICK_S = 0.005
"""How long an expression may run on the calling thread before it is handed to a slot (`_quick`)."""
SLOW_SOURCES = 1024
"""How many cut-short expressions are remembered (the least recently seen are forgotten)."""
QUICK_MEMORY_MB = 16
"""The memory an expression may use on the calling thread; one that needs more goes to a slot.
Kept small because the memory of a cut-short attempt stays with the calling thread's allocator."""
GRACE_S = 5.0
"""Past an evaluation's time limit (which QuickJS enforces), how long a caller waits for its
answer before giving up on it: the thread may have been starved of CPU, or be inside a long
builtin that the interruption reaches only when it returns."""

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_RESERVED_WORDS = (
    "arguments await break case catch class const continue debugger default delete do else enum eval export "
    "extends false finally for function if implements import in instanceof interface let new null package "
    "private protected public return static super switch this throw true try typeof var void while with yield"
)
_RESERVED = frozenset(_RESERVED_WORDS.split())
_FRAME = re.compile(r"<input>:(\d+):(\d+)")


class _Slot:
    """A thread and the one context it evaluates in (created, used and replaced on that thread).

    The thread is a daemon: a JavaScript evaluation cannot be interrupted from outside, so a
    process that is exiting (a stopping server) must not wait for one to reach its time limit."""

    def __init__(self, max_memory_bytes: int) -> None:
        self._max_memory_bytes = max_memory_bytes
        self._queue: queue.SimpleQueue[tuple[Future[Answer], tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stopped = False
        self._context: Context | None = None
        threading.Thread(target=self._serve, name="plait-js", daemon=True).start()

    def submit(
        self, kind: Kind, source: str, names: list[str], payload: str, max_output: int, limit: float
    ) -> Future[Answer]:
        future: Future[Answer] = Future()
        with self._lock:
            if self._stopped:
                future.cancel()
            else:
                self._queue.put((future, (kind, source, names, payload, max_output, limit)))
        return future

    def stop(self) -> None:
        """Let the thread end after what it is running; later submissions are cancelled."""
        with self._lock:
            self._stopped = True
            self._queue.put(None)

    def _serve(self) -> None:
        while (item := self._queue.get()) is not None:
            future, arguments = item
            if not future.set_running_or_notify_cancel():
                continue  # its caller gave up before it started
            try:
                future.set_result(self._run(*arguments))
            except BaseException as exc:
                future.set_exception(exc)

    def _run(self, kind: Kind, source: str, names: list[str], payload: str, max_output: int, limit: float) -> Answer:
        if self._context is None or self._context.broken:
            self._context = None
            self._context = Context(max_memory_bytes=self._max_memory_bytes)
        return self._context.run(kind, source, names, payload, max_output, limit)


class JsSandbox:
    """Runs user JavaScript: no host objects, strict mode, frozen intrinsics, a time and memory
    limit per evaluation, JSON in and JSON out. The guarantees are in this module's docstring.

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
    ) -> None:
        """`workers` slots serve one owner at most; up to `max_workers` (default twice as many)
        when several owners wait. `max_timeout_s` defaults to the configured cap."""
        cap = configured_max_timeout_s() if max_timeout_s is None else max_timeout_s
        if not (math.isfinite(cap) and cap > 0) or workers <= 0 or max_memory_mb <= 0 or max_output_bytes <= 0:
            raise ValueError("max_timeout_s, workers, max_memory_mb and max_output_bytes must be positive")
        if not (math.isfinite(timeout_s) and 0 < timeout_s <= cap):
            raise ValueError(f"timeout_s must be positive and at most max_timeout_s ({cap} s)")
        self.timeout_s = timeout_s
        self.max_timeout_s = cap
        self.max_memory_mb = max_memory_mb
        self.max_output_bytes = max_output_bytes
        memory = max_memory_mb * 1024 * 1024
        maximum = max(max_workers if max_workers is not None else 2 * workers, workers)
        self._pool: FairPool[_Slot] = FairPool(lambda: _Slot(memory), base=workers, maximum=maximum)
        self._local = threading.local()
        """Each calling thread's own context, for `_quick`."""
        self._slow: OrderedDict[tuple[Kind, str], None] = OrderedDict()
        """Expressions that were cut short on a calling thread: they go to a slot at once, so a
        thousand evaluations of one spinning expression hold the event loop once, not a thousand
        times."""
        self._lock = threading.Lock()
        self._closed = False

    # --- public API ---------------------------------------------------------------------------

    def evaluate(
        self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """The JSON value of `expression`, with each `scope` name bound to a deep-frozen copy of
        its value. `undefined` becomes None."""
        names, payload = _scope(scope)
        return self._request("evaluate", expression, names, payload, timeout_s, owner)

    def call(
        self, function_expression: str, *args: Any, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """Evaluate `function_expression` (`old => ({...old})`) and call it with deep-frozen
        copies of `args`; the JSON value it returns."""
        return self._request("call", function_expression, [], _json(list(args), "arguments"), timeout_s, owner)

    async def aevaluate(
        self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """`evaluate` without blocking the event loop (the scope is copied before the first await)."""
        names, payload = _scope(scope)
        return await self._arequest("evaluate", expression, names, payload, timeout_s, owner)

    async def acall(
        self, function_expression: str, *args: Any, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """`call` without blocking the event loop."""
        payload = _json(list(args), "arguments")
        return await self._arequest("call", function_expression, [], payload, timeout_s, owner)

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
        """Refuse queued and later requests; running evaluations end within their limits."""
        self._closed = True
        for slot in self._pool.close():
            slot.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- requests -----------------------------------------------------------------------------

    def _begin(
        self, kind: Kind, source: str, names: list[str], payload: str, timeout_s: float | None
    ) -> tuple[float, Answer | None]:
        """The checked time limit, and the answer when the calling thread could give it (`_quick`);
        what both the sync and the async request do before they need a slot."""
        limit = self._limit(kind, source, timeout_s)
        return limit, self._quick(kind, source, names, payload, limit)

    def _limit(self, kind: Kind, source: str, timeout_s: float | None) -> float:
        """The time limit, checked against the cap; and the source's syntax. Nothing unchecked
        reaches a context."""
        if self._closed:
            raise SandboxError("the sandbox is closed")
        limit = self.timeout_s if timeout_s is None else timeout_s
        problem = timeout_problem(limit, self.max_timeout_s)
        if problem is not None:
            raise SandboxError(problem)
        check_syntax(source, kind="expression" if kind == "evaluate" else "function")
        return float(limit)

    def _request(
        self, kind: Kind, source: str, names: list[str], payload: str, timeout_s: float | None, owner: str | None
    ) -> Any:
        limit, quick = self._begin(kind, source, names, payload, timeout_s)
        if quick is not None:
            return self._result(quick)
        ticket = self._pool.request(owner)
        try:
            ticket.done.wait()
        except BaseException:
            self._pool.withdraw(ticket)
            raise
        future = self._submit(ticket, kind, source, names, payload, limit)
        try:
            out = future.result(timeout=limit + GRACE_S)
        except concurrent.futures.TimeoutError:
            raise JsTimeoutError(f"expression exceeded {limit:g} s") from None
        except concurrent.futures.CancelledError:
            raise SandboxError("the sandbox was closed during the evaluation") from None
        except BaseException as exc:
            raise self._error(exc, limit) from None
        return self._result(out)

    async def _arequest(
        self, kind: Kind, source: str, names: list[str], payload: str, timeout_s: float | None, owner: str | None
    ) -> Any:
        limit, quick = self._begin(kind, source, names, payload, timeout_s)
        if quick is not None:
            return self._result(quick)
        loop = asyncio.get_running_loop()
        granted = loop.create_future()

        def wake() -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, granted)

        ticket = self._pool.request(owner, wake)
        try:
            await granted
        except BaseException:
            self._pool.withdraw(ticket)
            raise
        future = self._submit(ticket, kind, source, names, payload, limit)
        try:
            out = await asyncio.wait_for(asyncio.wrap_future(future), limit + GRACE_S)
        except TimeoutError:
            raise JsTimeoutError(f"expression exceeded {limit:g} s") from None
        except asyncio.CancelledError:
            if self._closed and future.cancelled():
                raise SandboxError("the sandbox was closed during the evaluation") from None
            raise
        except BaseException as exc:
            raise self._error(exc, limit) from None
        return self._result(out)

    def _quick(self, kind: Kind, source: str, names: list[str], payload: str, limit: float) -> Answer | None:
        """The answer, if the expression finishes within `QUICK_S` on the calling thread (in a
        context of that thread's own); None when it needs longer and must go to a slot.

        Nearly every expression takes microseconds, and handing it to a slot costs far more than
        evaluating it (two thread switches). An expression cannot have an effect outside its
        context, so one that is cut short here is simply evaluated again from the start, in a
        slot, under its whole limit; the caller (the event loop, say) is held `QUICK_S` at most,
        and once per expression (`_slow`)."""
        if self._closed:
            raise SandboxError("the sandbox is closed")
        key = (kind, source)
        with self._lock:
            if key in self._slow:
                self._slow.move_to_end(key)
                return None
        context: Context | None = getattr(self._local, "context", None)
        memory_mb = min(self.max_memory_mb, QUICK_MEMORY_MB)
        if context is None or context.broken:
            context = self._local.context = Context(max_memory_bytes=memory_mb * 1024 * 1024)
        try:
            return context.run(kind, source, names, payload, self.max_output_bytes, min(limit, QUICK_S))
        except Interrupted:
            if limit <= QUICK_S:
                raise self._error(Interrupted(), limit) from None
        except OutOfMemory as exc:
            if memory_mb >= self.max_memory_mb:
                raise self._error(exc, limit) from None
        except ContextFailed as exc:
            raise self._error(exc, limit) from None
        with self._lock:  # too slow or too big here: straight to a slot from now on
            self._slow[key] = None
            if len(self._slow) > SLOW_SOURCES:
                self._slow.popitem(last=False)
        return None

    def _submit(
        self, ticket: Ticket[_Slot], kind: Kind, source: str, names: list[str], payload: str, limit: float
    ) -> Future[Answer]:
        """Hand the evaluation to the slot the ticket was granted. The slot is given back when the
        evaluation has ended, even if nobody awaits it any more (a caller that gives up cancels
        it only if it has not started)."""
        if ticket.error is not None:
            raise ticket.error
        slot, owner = ticket.item, ticket.owner
        assert slot is not None
        future = slot.submit(kind, source, names, payload, self.max_output_bytes, limit)
        future.add_done_callback(lambda _: self._give_back(slot, owner))
        return future

    def _give_back(self, slot: _Slot, owner: str | None) -> None:
        surplus = self._pool.release(slot, owner)
        if surplus is not None:
            surplus.stop()

    def _error(self, exc: BaseException, limit: float) -> BaseException:
        if isinstance(exc, Interrupted):
            return JsTimeoutError(f"expression exceeded {limit:g} s")
        if isinstance(exc, OutOfMemory):
            message = f"expression exceeded the memory limit of {self.max_memory_mb} MB"
            if exc.as_null:
                message += " (QuickJS threw null, as it does when it cannot allocate an error;"
                message += " to throw, throw an Error)"
            return JsMemoryError(message)
        if isinstance(exc, ContextFailed):
            return JsRuntimeError(str(exc))
        return exc

    # --- results ------------------------------------------------------------------------------

    def _result(self, answer: Answer) -> Any:
        if answer.json is not None:
            text, limit = answer.json, self.max_output_bytes
            if 3 * len(text) > limit and len(text.encode("utf-8", "surrogatepass")) > limit:
                raise JsRuntimeError(f"the result is larger than the limit of {self.max_output_bytes} bytes")
            return json.loads(text)
        info = answer.thrown or {}
        line, column = _position(str(info.get("stack", "")))
        name, message = str(info.get("name", "Error")), str(info.get("message", ""))
        text = f"threw {message}" if name == "thrown value" else f"{name}: {message}"
        raise JsRuntimeError(text, line, column)


# --- values in --------------------------------------------------------------------------------


def _scope(scope: Mapping[str, Any]) -> tuple[list[str], str]:
    names = list(scope)
    for name in names:
        if not isinstance(name, str) or not _IDENTIFIER.match(name) or name in _RESERVED:
            raise SandboxError(f"scope name {name!r} is not a usable JavaScript identifier")
    return names, _json([scope[name] for name in names], "scope")


def _json(value: Any, what: str) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: only escaped can it reach QuickJS
            text = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        return text
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


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


__all__ = ["JsSandbox"]
