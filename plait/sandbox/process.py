"""`ProcessSandbox`: the JavaScript sandbox in child processes, so no expression can kill Plait.

V8 runs inside whatever process hosts it, and a few builtins make it abort that process outright
("Fatal JavaScript invalid size error": `'x'.repeat(2 ** 28).split('')`) before any time or
memory limit can act (see `sandbox.py`). The engine therefore evaluates in child processes, each
running a `JsSandbox`: a child that dies takes only the expression that killed it (the caller gets
a `JsRuntimeError` saying so) and is started again for the next evaluation. A child that does
not answer within the time limit plus a grace period is killed the same way.

Same surface as `JsSandbox` (`evaluate`, `call`, `aevaluate`, `acall`, `close`). Evaluations run
one at a time per child, in `workers` children (started on first use, spawn start method: a
fresh interpreter, nothing inherited but the options). Each costs an inter-process round trip
on top of the evaluation (~0.1-0.2 ms here).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import os
import tempfile
import threading
from collections.abc import Mapping
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any, Self

from plait.sandbox import errors
from plait.sandbox.errors import JsRuntimeError, JsTimeoutError, SandboxError

GRACE_S = 5.0
"""Beyond an evaluation's own time limit (enforced inside the child), how long to wait for the
child before killing it (it may be finishing a long builtin, or be starting up)."""


class _Child:
    """One worker process and the pipe to it; used under its lock."""

    def __init__(self, options: dict[str, Any]):
        self.lock = threading.Lock()
        self._options = options
        self._process: Any = None
        self._conn: Connection | None = None
        self._stderr: str | None = None
        """The child's stderr, a file: V8 prints why it aborted there."""

    def _last_words(self) -> str | None:
        """V8's own line about why it aborted, if the child wrote one."""
        if self._stderr is None:
            return None
        try:
            with open(self._stderr, encoding="utf-8", errors="replace") as handle:
                lines = [line.strip() for line in handle if line.strip()]
        except OSError:
            return None
        fatal = [line.lstrip("# ").strip() for line in lines if "Fatal" in line and "error" in line.lower()]
        return fatal[-1] if fatal else None

    def request(self, message: tuple[Any, ...], limit: float) -> Any:
        if self._process is None or not self._process.is_alive():
            self._start()
        assert self._conn is not None
        try:
            self._conn.send(message)
            if not self._conn.poll(limit + GRACE_S):
                self.stop(kill=True)
                raise JsTimeoutError(f"expression exceeded {limit} s (its sandbox process was stopped)")
            kind, payload = self._conn.recv()
        except (EOFError, OSError):
            self.stop(kill=True)
            reason = self._last_words() or "it exited"
            raise JsRuntimeError(
                f"the expression crashed the JavaScript engine ({reason}); a new sandbox process serves the next one"
            ) from None
        if kind == "ok":
            return payload
        name, message_text, line, column = payload
        error_class = getattr(errors, name, SandboxError)
        raise error_class(message_text, line, column)

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        if self._stderr is None:
            handle, self._stderr = tempfile.mkstemp(prefix="plait-js-", suffix=".log")
            os.close(handle)
        args = (child, self._options, self._stderr)
        process = context.Process(target=_serve, args=args, daemon=True, name="plait-js")
        process.start()
        child.close()
        self._process, self._conn = process, parent

    def stop(self, *, kill: bool = False) -> None:
        process, conn, self._process, self._conn = self._process, self._conn, None, None
        if conn is not None:
            if not kill:
                with contextlib.suppress(OSError):
                    conn.send(("stop",))
            conn.close()
        if process is not None:
            if kill:
                process.kill()
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)

    def discard(self) -> None:
        self.stop()
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._stderr)
            self._stderr = None


class ProcessSandbox:
    def __init__(
        self,
        *,
        timeout_s: float = 1.0,
        max_memory_mb: int = 64,
        max_output_bytes: int = 1_000_000,
        workers: int = 2,
    ) -> None:
        if timeout_s <= 0 or workers <= 0:
            raise ValueError("timeout_s and workers must be positive")
        self.timeout_s = timeout_s
        options = {"timeout_s": timeout_s, "max_memory_mb": max_memory_mb, "max_output_bytes": max_output_bytes}
        self._children = [_Child({**options, "workers": 1}) for _ in range(workers)]
        self._turn = itertools.cycle(range(workers))
        self._closed = False

    def evaluate(self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None) -> Any:
        """`JsSandbox.evaluate`, in a child process."""
        return self._request(("evaluate", expression, dict(scope), timeout_s), timeout_s)

    def call(self, function_expression: str, *args: Any, timeout_s: float | None = None) -> Any:
        """`JsSandbox.call`, in a child process."""
        return self._request(("call", function_expression, list(args), timeout_s), timeout_s)

    async def aevaluate(self, expression: str, scope: Mapping[str, Any], *, timeout_s: float | None = None) -> Any:
        return await asyncio.to_thread(self.evaluate, expression, dict(scope), timeout_s=timeout_s)

    async def acall(self, function_expression: str, *args: Any, timeout_s: float | None = None) -> Any:
        return await asyncio.to_thread(self.call, function_expression, *args, timeout_s=timeout_s)

    def close(self) -> None:
        self._closed = True
        for child in self._children:
            with child.lock:
                child.discard()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _request(self, message: tuple[Any, ...], timeout_s: float | None) -> Any:
        if self._closed:
            raise SandboxError("the sandbox is closed")
        limit = self.timeout_s if timeout_s is None else timeout_s
        # A free child if there is one, else wait for the next in turn.
        for child in self._children:
            if child.lock.acquire(blocking=False):
                try:
                    return child.request(message, limit)
                finally:
                    child.lock.release()
        child = self._children[next(self._turn)]
        with child.lock:
            return child.request(message, limit)


def _serve(conn: Connection, options: dict[str, Any], stderr: str) -> None:
    """The child: evaluate what the parent sends, one at a time, until told to stop. Its stderr
    (where V8 prints a fatal error) goes to a file the parent reads after a crash."""
    log = os.open(stderr, os.O_WRONLY | os.O_TRUNC)
    os.dup2(log, 2)
    os.close(log)
    from plait.sandbox.sandbox import JsSandbox

    with JsSandbox(**options) as sandbox:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                return
            if message[0] == "stop":
                return
            kind, source, argument, timeout_s = message
            try:
                if kind == "evaluate":
                    value = sandbox.evaluate(source, argument, timeout_s=timeout_s)
                else:
                    value = sandbox.call(source, *argument, timeout_s=timeout_s)
            except SandboxError as exc:
                conn.send(("error", (type(exc).__name__, exc.message, exc.line, exc.column)))
            else:
                conn.send(("ok", value))
