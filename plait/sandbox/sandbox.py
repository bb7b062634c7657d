"""`JsSandbox`: evaluate user JavaScript expressions in locked-down, reused V8 contexts.

How an evaluation runs: the expression is syntax-checked once (`check_syntax`, cached), then
spliced into a script that calls the context's runner:

    "use strict";RUNNER.evaluate(function (input, nodes, current) { return (
    EXPRESSION
    ); }, "<scope values as JSON>", MAX_OUTPUT)
    //# sourceURL=plait-expression

The runner parses and deep-freezes the values, calls the function and returns its result as a
JSON string (see `_prelude.py`). The expression starts on line 2 of that script, so positions in
V8 stack traces map back to it by subtracting one.

Contexts are reused: creating one (isolate + lockdown) costs far more than evaluating in one.
Synchronous calls share one context behind a lock; `aevaluate`/`acall` run in a small thread
pool, one context per worker thread, so a slow expression blocks neither the event loop nor the
other evaluations. A context whose evaluation timed out or ran out of memory is closed
(terminating whatever still runs in it) and replaced on next use.

What this in-process design cannot contain (V8 runs inside the Python process):

- A few builtins allocate past V8's hard maximum in one step and V8 *aborts the process*
  ("Fatal JavaScript invalid size error", or "Reached heap limit"): `'x'.repeat(2 ** 28).split('')`,
  `new Array(2 ** 28).fill(0)` (`test_a_fatal_v8_allocation_kills_an_in_process_sandbox`). That is
  why the engine evaluates in `ProcessSandbox` (`process.py`): `JsSandbox`es in child processes,
  restarted after such a crash or an overrun.
- Termination and the memory limit act when control returns to JavaScript: a long builtin
  (`new Array(2 ** 26).fill(0)`: ~15 s, ~600 MB) runs to its end. The caller still gets its
  `JsTimeoutError` on time and other contexts keep answering, but the retired isolate keeps a
  core and that memory until the builtin returns, and interpreter exit waits for it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from plait.model.limits import MAX_DEPTH
from plait.sandbox._prelude import EXPRESSION_URL
from plait.sandbox.errors import JsMemoryError, JsRuntimeError, JsSyntaxError, JsTimeoutError, SandboxError
from plait.sandbox.syntax import Kind, check_syntax, parse_error

if TYPE_CHECKING:
    from plait.sandbox._host import Context

_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_RESERVED_WORDS = (
    "arguments await break case catch class const continue debugger default delete do else enum eval export "
    "extends false finally for function if implements import in instanceof interface let new null package "
    "private protected public return static super switch this throw true try typeof var void while with yield"
)
_RESERVED = frozenset(_RESERVED_WORDS.split())
_FRAME = re.compile(re.escape(EXPRESSION_URL) + r":(\d+):(\d+)")
_ASYNC_SOURCES = ("async", "import")
_BUFFER_FAILED = ("Array buffer allocation failed", "Out of memory")
"""V8's RangeError messages when a backing store cannot be allocated (new, resize, transfer)."""


class JsSandbox:
    """Runs user JavaScript expressions: no host objects, strict mode, frozen intrinsics,
    a time and memory limit per evaluation, JSON in and JSON out.

    A context manager; `close()` frees every V8 context it created (idempotent)."""

    def __init__(
        self,
        *,
        timeout_s: float = 1.0,
        max_memory_mb: int = 64,
        max_output_bytes: int = 1_000_000,
        workers: int = 2,
    ) -> None:
        if timeout_s <= 0 or max_memory_mb <= 0 or max_output_bytes <= 0 or workers <= 0:
            raise ValueError("timeout_s, max_memory_mb, max_output_bytes and workers must be positive")
        self.timeout_s = timeout_s
        self.max_memory_mb = max_memory_mb
        self.max_output_bytes = max_output_bytes
        self._workers = workers
        self._lock = threading.Lock()  # guards the bookkeeping below
        self._run_lock = threading.Lock()  # one synchronous evaluation at a time in the shared context
        self._shared: Context | None = None
        self._contexts: set[Context] = set()
        self._local = threading.local()
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False

    # --- public API ---------------------------------------------------------------------------

    def evaluate(self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None) -> Any:
        """The JSON value of `expression`, with each `scope` name bound to a deep-frozen copy of
        its value. `undefined` becomes None."""
        names, payload = self._scope(scope)
        return self._with_shared(lambda ctx: self._evaluate(ctx, expression, names, payload, timeout_s))

    def call(self, function_expression: str, *args: Any, timeout_s: float | None = None) -> Any:
        """Evaluate `function_expression` (`old => ({...old})`) and call it with deep-frozen
        copies of `args`; the JSON value it returns."""
        payload = self._json(list(args), "arguments")
        return self._with_shared(lambda ctx: self._call(ctx, function_expression, payload, timeout_s))

    async def aevaluate(self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None) -> Any:
        """`evaluate` on a worker thread: awaiting it never blocks the event loop."""
        names, payload = self._scope(scope)  # copied before the first await: later changes do not count
        return await self._offload(lambda ctx: self._evaluate(ctx, expression, names, payload, timeout_s))

    async def acall(self, function_expression: str, *args: Any, timeout_s: float | None = None) -> Any:
        """`call` on a worker thread."""
        payload = self._json(list(args), "arguments")
        return await self._offload(lambda ctx: self._call(ctx, function_expression, payload, timeout_s))

    def close(self) -> None:
        """Close every V8 context of this sandbox, after the evaluations in progress (each ends
        within its time limit)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        with self._run_lock, self._lock:
            contexts, self._contexts, self._shared = list(self._contexts), set(), None
        for context in contexts:
            context.close()

    def evaluate_payload(
        self, kind: str, source: str, names: list[str], payload: str, timeout_s: float | None = None
    ) -> Any:
        """`evaluate` (kind "evaluate") or `call` of values already checked and encoded by
        `encode`: a sandbox child runs what its parent encoded, without encoding it again."""
        if kind == "evaluate":
            return self._with_shared(lambda ctx: self._evaluate(ctx, source, names, payload, timeout_s))
        return self._with_shared(lambda ctx: self._call(ctx, source, payload, timeout_s))

    @staticmethod
    def encode(kind: str, argument: Any) -> tuple[list[str], str]:
        """The scope (a mapping) or arguments (a list) as `evaluate_payload` takes them; raises
        SandboxError for what `evaluate`/`call` would refuse."""
        if kind == "evaluate":
            return JsSandbox._scope(argument)
        return [], JsSandbox._json(list(argument), "arguments")

    def reset(self) -> None:
        """Drop the shared context (the next synchronous evaluation creates a fresh one): what a
        sandbox child does when an evaluation left memory behind."""
        with self._run_lock:
            context, self._shared = self._shared, None
        if context is not None:
            with self._lock:
                self._contexts.discard(context)
            context.close()

    def heap_used(self) -> int:
        """Bytes used on the V8 heap of the shared context (0 without one)."""
        with self._run_lock:
            context = self._shared
            return 0 if context is None or context.closed else context.heap_used()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- contexts -----------------------------------------------------------------------------

    def _new_context(self) -> Context:
        from plait.sandbox._host import Context

        context = Context(max_memory_bytes=self.max_memory_mb * 1024 * 1024)
        with self._lock:
            if self._closed:
                context.close()
                raise SandboxError("the sandbox is closed")
            self._contexts.add(context)
        return context

    def _retire(self, context: Context, *, busy: bool) -> None:
        with self._lock:
            self._contexts.discard(context)
        context.retire(busy=busy)

    def _with_shared(self, work: Callable[[Context], Any]) -> Any:
        with self._run_lock:
            if self._closed:
                raise SandboxError("the sandbox is closed")
            if self._shared is None or self._shared.closed:
                self._shared = self._new_context()
            return work(self._shared)

    async def _offload(self, work: Callable[[Context], Any]) -> Any:
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox is closed")
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="plait-js")
            pool = self._pool
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, functools.partial(self._on_worker, work))

    def _on_worker(self, work: Callable[[Context], Any]) -> Any:
        context: Context | None = getattr(self._local, "context", None)
        if context is None or context.closed:
            context = self._local.context = self._new_context()
        return work(context)

    # --- one evaluation -----------------------------------------------------------------------

    def _evaluate(
        self, context: Context, expression: str, names: list[str], payload: str, timeout_s: float | None
    ) -> Any:
        check_syntax(expression)
        script = (
            f'"use strict";{context.runner}.evaluate(function ({", ".join(names)}) {{ return (\n'
            f"{expression}\n); }}, {json.dumps(payload)}, {self.max_output_bytes})\n"
            f"//# sourceURL={EXPRESSION_URL}\n"
        )
        return self._run(context, script, expression, timeout_s)

    def _call(self, context: Context, expression: str, payload: str, timeout_s: float | None) -> Any:
        check_syntax(expression, kind="function")
        script = (
            f'"use strict";{context.runner}.call(function () {{ return (\n'
            f"{expression}\n); }}, {json.dumps(payload)}, {self.max_output_bytes})\n"
            f"//# sourceURL={EXPRESSION_URL}\n"
        )
        return self._run(context, script, expression, timeout_s)

    def _run(self, context: Context, script: str, expression: str, timeout_s: float | None) -> Any:
        from py_mini_racer import JSEvalException, JSOOMException, JSParseException

        from plait.sandbox._host import Timeout

        limit = self.timeout_s if timeout_s is None else timeout_s
        barrier = any(word in expression for word in _ASYNC_SOURCES)
        try:
            out = context.run(script, limit, barrier=barrier)
        except Timeout as exc:
            self._retire(context, busy=exc.busy)
            raise JsTimeoutError(f"expression exceeded {limit} s") from None
        except JSOOMException:
            self._retire(context, busy=False)
            raise JsMemoryError(f"expression exceeded the memory limit of {self.max_memory_mb} MB") from None
        except JSParseException as exc:  # not after check_syntax; kept for safety
            raise JsSyntaxError(*parse_error(str(exc), expression)) from None
        except JSEvalException as exc:
            self._retire(context, busy=False)
            raise JsRuntimeError(f"the JavaScript context failed: {str(exc).partition(chr(10))[0]}") from None
        return self._result(out)

    def _result(self, out: object) -> Any:
        if not isinstance(out, str) or not out:
            raise JsRuntimeError("the sandbox runner returned no result")
        size = len(out) - 1
        if 3 * size > self.max_output_bytes and len(out.encode("utf-8", "surrogatepass")) - 1 > self.max_output_bytes:
            raise JsRuntimeError(f"the result is larger than the limit of {self.max_output_bytes} bytes")
        tag, body = out[0], out[1:]
        if tag == "R":
            return json.loads(body)
        info = json.loads(body)
        line, column = _position(str(info.get("stack", "")))
        name, message = str(info.get("name", "Error")), str(info.get("message", ""))
        if name == "RangeError" and any(words in message for words in _BUFFER_FAILED):
            # A backing store beyond the process's memory limit (see _worker.py).
            raise JsMemoryError(f"expression exceeded the memory limit of {self.max_memory_mb} MB ({message})")
        text = f"threw {message}" if name == "thrown value" else f"{name}: {message}"
        raise JsRuntimeError(text, line, column)

    # --- values in ----------------------------------------------------------------------------

    @staticmethod
    def _scope(scope: Mapping[str, Any]) -> tuple[list[str], str]:
        names = list(scope)
        for name in names:
            if not isinstance(name, str) or not _IDENTIFIER.match(name) or name in _RESERVED:
                raise SandboxError(f"scope name {name!r} is not a usable JavaScript identifier")
        return names, JsSandbox._json([scope[name] for name in names], "scope")

    @staticmethod
    def _json(value: Any, what: str) -> str:
        try:
            return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise SandboxError(f"the {what} is not JSON: {exc}") from None
        except RecursionError:  # far deeper than the limit the runner checks (see _prelude.py)
            raise SandboxError(_too_deep(what)) from None


def _too_deep(what: str) -> str:
    verb = "are" if what.endswith("s") else "is"
    return f"the {what} {verb} nested deeper than the limit of {MAX_DEPTH} levels; flatten it before passing it"


def _position(stack: str) -> tuple[int | None, int | None]:
    """The innermost frame inside the expression (line 1 of the script is the wrapper)."""
    for match in _FRAME.finditer(stack):
        line, column = int(match.group(1)), int(match.group(2))
        if line >= 2:
            return line - 1, column
    return None, None


__all__ = ["JsSandbox", "Kind"]
