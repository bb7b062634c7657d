"""`ProcessSandbox`: the JavaScript sandbox in child processes, so no expression can kill Plait.

V8 runs inside whatever process hosts it, and a few builtins make it abort that process outright
("Fatal JavaScript invalid size error": `'x'.repeat(2 ** 28).split('')`) before any time or
memory limit can act (see `sandbox.py`). The engine therefore evaluates in child processes, each
running a `JsSandbox` (spawn start method: a fresh interpreter, nothing inherited but the
options). Same surface as `JsSandbox` (`evaluate`, `call`, `aevaluate`, `acall`, `close`), plus
an `owner` keyword (the run id) on each.

What is guaranteed, and the tests that hold it (tests/sandbox/test_process_*.py):

- Isolation between runs: one evaluation at a time per child; every request carries an id the
  reply must repeat, and *any* exception while a request is in flight (a timeout, a crash, a
  kill, a cancellation, an unpicklable argument, KeyboardInterrupt) stops that child, so no
  reply is ever read by another request.
- Time: `timeout_s` is at most `max_timeout_s` (plait.toml `[sandbox] max_timeout_s`, see
  `limits.py`); a larger, non-finite or non-positive value is refused. The child enforces the
  limit; the parent kills a child that has not answered `GRACE_S` later.
- Memory: `max_memory_mb` bounds the V8 heap, and an OS limit (`RLIMIT_DATA`, set from the
  child's measured baseline, `_worker.py`) bounds everything else, ArrayBuffers included. Going
  over is a `JsMemoryError`; a child whose memory stays up after an evaluation is recycled, so
  one evaluation never fails for another's memory.
- Fairness: children are shared between owners (`_pool.py`): one run cannot hold more than
  its share while another waits, and the pool grows up to `max_workers` children for waiting
  owners.
- Cancellation: cancelling the task awaiting `aevaluate`/`acall` kills the child serving it (a
  new one serves the next request) or drops the request from the queue.
- Shutdown: `close()` kills every child, busy ones included; it does not wait for evaluations.
- Nesting: a scope, argument or result nested deeper than `plait.model.limits.MAX_DEPTH` is
  refused with an error naming the limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import multiprocessing
import os
import tempfile
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any, Self

from plait.sandbox import errors
from plait.sandbox._pool import FairPool, Ticket
from plait.sandbox.errors import JsMemoryError, JsRuntimeError, JsTimeoutError, SandboxError
from plait.sandbox.limits import max_timeout_s as configured_max_timeout_s
from plait.sandbox.limits import timeout_problem
from plait.sandbox.sandbox import JsSandbox

GRACE_S = 5.0
"""Beyond an evaluation's own time limit (enforced inside the child), how long to wait for the
child before killing it (it may be finishing a long builtin, or be starting up)."""
_MEMORY_WORDS = ("out of memory", "heap limit", "allocation failed")


class _Child:
    """One worker process and the pipe to it. Serves one request at a time (the pool sees to
    that); `interrupt` and `stop` may come from other threads."""

    def __init__(self, options: dict[str, Any]):
        self._options = options
        self._lock = threading.Lock()  # guards the fields below, never held while waiting
        self._process: Any = None
        self._conn: Connection | None = None
        self._log_path: str | None = None
        """Unlinked by the child as soon as it has opened it (and by `stop`, if it never did)."""
        self._log: int | None = None
        """The parent's descriptor of the child's stderr file (unlinked): V8 says there why it aborted."""
        self._next_id = 0

    @property
    def pid(self) -> int | None:
        process = self._process
        return None if process is None else process.pid

    def request(self, message: tuple[Any, ...], limit: float) -> Any:
        """Send one request and return its reply's value. On *any* exception the child is killed:
        its pipe may hold a reply nobody will read."""
        try:
            conn, process = self._ensure_started()
            self._next_id += 1
            request_id = self._next_id
            conn.send((request_id, *message))
            if not conn.poll(limit + GRACE_S):
                raise JsTimeoutError(f"expression exceeded {limit} s (its sandbox process was stopped)")
            reply_id, kind, payload, retire = conn.recv()
        except (EOFError, OSError):
            process = self._process
            if process is not None:
                process.join(timeout=2)  # it is dying: let it finish writing why
            error = self._crash_error(self._log)
            self.stop(kill=True)
            raise error from None
        except BaseException:
            self.stop(kill=True)
            raise
        if reply_id != request_id:
            self.stop(kill=True)
            raise JsRuntimeError("the sandbox process answered another request; it was replaced")
        if retire:
            self.stop()
        if kind == "ok":
            return payload
        name, message_text, line, column = payload
        error_class = getattr(errors, name, SandboxError)
        raise error_class(message_text, line, column)

    def interrupt(self) -> None:
        """Kill the process now (from any thread); the request waiting on it fails at once."""
        process = self._process
        if process is not None:
            with contextlib.suppress(Exception):
                process.kill()

    def _ensure_started(self) -> tuple[Connection, Any]:
        with self._lock:
            process, conn = self._process, self._conn
        # An idle child has nothing to read: a readable pipe means it died (EOF) or holds a
        # reply nobody asked for; either way it serves nobody again.
        if process is not None and conn is not None and process.is_alive() and not _readable(conn):
            return conn, process
        self.stop(kill=True)
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        handle, path = tempfile.mkstemp(prefix="plait-js-", suffix=".log")
        try:
            process = context.Process(target=_serve, args=(child, self._options, path), daemon=True, name="plait-js")
            process.start()
        except BaseException:
            os.close(handle)
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        finally:
            child.close()
        with self._lock:
            self._process, self._conn, self._log, self._log_path = process, parent, handle, path
        return parent, process

    def _crash_error(self, log: int | None) -> SandboxError:
        reason = _last_words(log)
        if reason is not None and any(word in reason.lower() for word in _MEMORY_WORDS):
            limit = self._options["max_memory_mb"]
            return JsMemoryError(f"expression exceeded the memory limit of {limit} MB ({reason})")
        return JsRuntimeError(
            f"the expression crashed the JavaScript engine ({reason or 'it exited'}); "
            "a new sandbox process serves the next one"
        )

    def stop(self, *, kill: bool = False) -> None:
        with self._lock:
            process, conn, log, path = self._process, self._conn, self._log, self._log_path
            self._process = self._conn = self._log = self._log_path = None
        if conn is not None:
            if not kill:
                with contextlib.suppress(OSError, ValueError):
                    conn.send(("stop",))
            conn.close()
        if process is not None:
            if kill:
                process.kill()
            process.join(timeout=2)
            if process.is_alive():
                process.kill()
                process.join(timeout=2)
        if log is not None:
            os.close(log)
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _readable(conn: Connection) -> bool:
    try:
        return conn.poll(0)
    except (OSError, ValueError):
        return True


def _last_words(log: int | None) -> str | None:
    """V8's own line about why it aborted, if the child wrote one."""
    if log is None:
        return None
    try:
        text = os.pread(log, 1 << 16, 0).decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.lstrip("# ").strip() for line in text.splitlines()]
    fatal = [line for line in lines if line.startswith("Fatal")]
    return fatal[-1] if fatal else None


class ProcessSandbox:
    """The sandbox the engine uses: `JsSandbox`'s methods, run in child processes. No expression
    can crash or hang Plait, no result reaches another evaluation, and runs share the children
    fairly. The guarantees in full are in this module's docstring."""

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
        """`workers` children serve one owner at most; up to `max_workers` (default twice as many)
        when several owners wait. `max_timeout_s` defaults to the configured cap."""
        cap = configured_max_timeout_s() if max_timeout_s is None else max_timeout_s
        if not (math.isfinite(cap) and cap > 0) or workers <= 0 or max_memory_mb <= 0:
            raise ValueError("max_timeout_s, workers and max_memory_mb must be positive")
        if not (math.isfinite(timeout_s) and 0 < timeout_s <= cap):
            raise ValueError(f"timeout_s must be positive and at most max_timeout_s ({cap} s)")
        self.timeout_s = timeout_s
        self.max_timeout_s = cap
        self.max_memory_mb = max_memory_mb
        options = {"timeout_s": timeout_s, "max_memory_mb": max_memory_mb, "max_output_bytes": max_output_bytes}
        options["workers"] = 1
        maximum = max_workers if max_workers is not None else 2 * workers
        self._pool: FairPool[_Child] = FairPool(lambda: _Child(options), base=workers, maximum=max(maximum, workers))
        self._threads = ThreadPoolExecutor(max_workers=self._pool.maximum, thread_name_prefix="plait-js-client")
        self._closed = False

    def evaluate(
        self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """`JsSandbox.evaluate`, in a child process."""
        message = self._message("evaluate", expression, dict(scope), timeout_s)
        return self._request(message, owner)

    def call(
        self, function_expression: str, *args: Any, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """`JsSandbox.call`, in a child process."""
        return self._request(self._message("call", function_expression, list(args), timeout_s), owner)

    async def aevaluate(
        self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """`evaluate` without blocking the event loop; cancelling the awaiting task kills the
        child serving it."""
        message = self._message("evaluate", expression, dict(scope), timeout_s)
        return await self._arequest(message, owner)

    async def acall(
        self, function_expression: str, *args: Any, timeout_s: float | None = None, owner: str | None = None
    ) -> Any:
        """`call` without blocking the event loop; cancelling the awaiting task kills the child
        serving it."""
        return await self._arequest(self._message("call", function_expression, list(args), timeout_s), owner)

    def child_pids(self) -> list[int]:
        """The running children's process ids (for tests and diagnostics)."""
        return [pid for child in self._pool.items() if (pid := child.pid) is not None]

    def close(self) -> None:
        """Kill every child, busy ones included, and refuse queued and later requests."""
        self._closed = True
        children = self._pool.close()
        for child in children:
            child.interrupt()
        for child in children:
            child.stop(kill=True)
        self._threads.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- requests -----------------------------------------------------------------------------

    def _message(self, kind: str, source: str, argument: Any, timeout_s: float | None) -> tuple[Any, ...]:
        """The request as sent, checked first: a JSON value within the nesting limit, a timeout
        within the cap. Nothing unchecked reaches the pipe."""
        if self._closed:
            raise SandboxError("the sandbox is closed")
        limit = self.timeout_s if timeout_s is None else timeout_s
        problem = timeout_problem(limit, self.max_timeout_s)
        if problem is not None:
            raise SandboxError(problem)
        names, payload = JsSandbox.encode(kind, argument)
        return (kind, source, names, payload, float(limit))

    def _request(self, message: tuple[Any, ...], owner: str | None) -> Any:
        ticket = self._pool.request(owner)
        try:
            ticket.done.wait()
        except BaseException:
            self._pool.withdraw(ticket)
            raise
        return self._serve_ticket(ticket, message)

    async def _arequest(self, message: tuple[Any, ...], owner: str | None) -> Any:
        loop = asyncio.get_running_loop()
        granted = loop.create_future()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_resolve, granted)

        ticket = self._pool.request(owner, wake)
        try:
            await granted
        except BaseException:
            self._pool.withdraw(ticket)
            raise
        if ticket.error is not None:
            raise ticket.error
        child = ticket.item
        work = loop.run_in_executor(self._threads, functools.partial(self._serve_ticket, ticket, message))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            if child is not None:
                child.interrupt()  # the thread's request fails at once and replaces the child
            work.add_done_callback(_consume)
            raise

    def _serve_ticket(self, ticket: Ticket[_Child], message: tuple[Any, ...]) -> Any:
        if ticket.error is not None:
            raise ticket.error
        child = ticket.item
        assert child is not None
        try:
            return child.request(message, message[-1])
        except SandboxError:
            if self._closed:
                raise SandboxError("the sandbox was closed during the evaluation") from None
            raise
        finally:
            surplus = self._pool.release(child, ticket.owner)
            if surplus is not None:
                surplus.stop()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve the outcome of an abandoned request, so asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()


def _serve(conn: Connection, options: dict[str, Any], stderr: str) -> None:
    from plait.sandbox._worker import serve

    serve(conn, options, stderr)
