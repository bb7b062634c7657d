"""V8 contexts and the one thread that talks to mini-racer.

mini-racer runs every context's isolate on its own C++ thread and reports results through an
asyncio loop. All contexts here share one such loop, on a daemon thread started on first use
(`host_loop`), and **every** call into mini-racer's library happens on that thread, creating and
freeing contexts included: mini-racer 0.14.1 crashes (SIGSEGV in `mr_init_context`) when a
context is created while other threads call into the library for other contexts
(`tests/sandbox/test_sandbox_async.py::test_contexts_created_concurrently` reproduces it).

A caller thread submits a coroutine to the loop and blocks on its result. For an expression
that may queue microtasks (its source contains `async` or `import`; the prelude removed every
other source of promises), the coroutine also queues a *barrier* (`0`) right behind the
evaluation: it completes only after the isolate has run those microtasks, which V8 runs after
the script has returned its result, outside any time limit. Waiting for both under one deadline
bounds `(async () => { await 0; for (;;) {} })()` too, which would otherwise return and leave
the isolate spinning.

After a timeout or an out-of-memory error the context is *retired*: the caller gets its error at
once, and the loop frees the isolate (`mr_free_context` terminates what still runs in it) --
at once if only microtasks were left running, otherwise after whatever was running has
stopped. Termination takes effect only when control returns to JavaScript, so a long builtin
(`new Array(2 ** 27).fill(0)`) keeps its isolate busy until it returns; freeing it earlier
would block the loop, and every other evaluation, for that long.

Every context is closed explicitly (FIELD-NOTES: after a timed-out eval the interpreter could
hang at exit unless the context was closed); contexts still open at interpreter exit are closed
by an `atexit` hook, then the loop is stopped.

`py_mini_racer` is imported only here, when a context is first created: importing
`plait.sandbox` does not load V8.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import secrets
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from plait.sandbox._prelude import PRELUDE, RUNNER_PLACEHOLDER
from plait.sandbox.errors import SandboxError

if TYPE_CHECKING:
    from py_mini_racer import MiniRacer

V8_EXTRA_FLAGS = ("--disallow-code-generation-from-strings",)
PRELUDE_TIMEOUT_S = 10.0
RETIRE_WAIT_S = 120.0
"""How long a retired context may finish a builtin before it is freed regardless."""
RETIRE_PROBE_S = 0.5

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_live: dict[int, AbstractContextManager[MiniRacer]] = {}
"""Every context not yet freed (retired ones included), for the exit hook. Loop thread only."""


class Timeout(Exception):
    """The evaluation (or the microtasks it queued) did not finish in time."""

    def __init__(self, busy: bool) -> None:
        super().__init__("timed out")
        self.busy = busy
        """The script itself was still running (not only microtasks after it)."""


def host_loop() -> asyncio.AbstractEventLoop:
    """The loop all contexts report to; V8 is initialised with our flags before the first context."""
    global _loop, _thread
    with _lock:
        if _loop is None:
            from py_mini_racer import DEFAULT_V8_FLAGS, init_mini_racer

            # Ignored if something in this process initialised mini-racer first; the lockdown
            # in the prelude does not depend on the flag.
            init_mini_racer(flags=(*DEFAULT_V8_FLAGS, *V8_EXTRA_FLAGS), ignore_duplicate_init=True)
            loop = asyncio.new_event_loop()
            loop.set_exception_handler(_log_loop_error)
            thread = threading.Thread(target=loop.run_forever, name="plait-v8", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
            atexit.register(_shutdown)
        return _loop


class Context:
    """One V8 isolate + context. With `lockdown=True` the prelude runs first and
    `runner` names the runner object that scripts call."""

    def __init__(self, *, max_memory_bytes: int | None = None, lockdown: bool = True) -> None:
        self._loop = host_loop()
        self._maker: AbstractContextManager[MiniRacer] | None = None
        self._mr: MiniRacer | None = None
        self.runner = "__plait_runner_" + secrets.token_hex(8)
        self._on_loop(lambda: self._open(max_memory_bytes))
        try:
            if lockdown:
                self.run(PRELUDE.replace(RUNNER_PLACEHOLDER, self.runner), PRELUDE_TIMEOUT_S)
        except BaseException:
            self.close()
            raise

    def _open(self, max_memory_bytes: int | None) -> None:
        from py_mini_racer import mini_racer

        maker = mini_racer(self._loop)
        mr = maker.__enter__()
        _live[id(maker)] = maker
        if max_memory_bytes is not None:
            mr.set_hard_memory_limit(max_memory_bytes)
        self._maker, self._mr = maker, mr

    def _on_loop(self, action: Callable[[], None]) -> None:
        async def call() -> None:
            action()

        asyncio.run_coroutine_threadsafe(call(), self._loop).result()

    def heap_used(self) -> int:
        """Bytes in use on this context's V8 heap."""
        mr = self._mr
        if mr is None:
            return 0
        found: list[int] = []
        self._on_loop(lambda: found.append(int(mr.heap_stats().get("used_heap_size", 0))))
        return found[0]

    @property
    def closed(self) -> bool:
        return self._mr is None

    def run(self, script: str, timeout_s: float, *, barrier: bool = True) -> Any:
        """Evaluate `script` within `timeout_s`, blocking the caller; with `barrier`, the
        microtasks it queued must finish within the same deadline.

        Raises `Timeout`, or mini-racer's JSParseException / JSOOMException / JSEvalException."""
        future = asyncio.run_coroutine_threadsafe(self._run(script, timeout_s, barrier), self._loop)
        return future.result()

    async def _run(self, script: str, timeout_s: float, barrier: bool) -> Any:
        mr = self._mr
        if mr is None:
            raise SandboxError("the JavaScript context is closed")
        main = asyncio.ensure_future(mr.eval_cancelable(script))
        if not barrier:  # the common case, without gather's extra task
            try:
                return await asyncio.wait_for(main, timeout_s)
            except TimeoutError:
                raise Timeout(busy=True) from None
        tasks = [main, asyncio.ensure_future(mr.eval_cancelable("0"))]
        try:
            results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout_s)
        except TimeoutError:
            raise Timeout(busy=not main.done() or main.cancelled()) from None
        if isinstance(results[0], BaseException):
            raise results[0]
        return results[0]

    def close(self) -> None:
        """Free the isolate now, terminating anything still running in it. Idempotent."""
        maker, self._maker, self._mr = self._maker, None, None
        if maker is not None and not self._loop.is_closed():
            self._on_loop(lambda: _free(maker))

    def retire(self, *, busy: bool) -> None:
        """Close without waiting (after a timeout or OOM): the loop frees the isolate, once the
        script still running in it has stopped when `busy`, else at once."""
        maker, mr, self._maker, self._mr = self._maker, self._mr, None, None
        if maker is None or mr is None or self._loop.is_closed():
            return

        async def free_when_idle() -> None:
            deadline = self._loop.time() + RETIRE_WAIT_S
            while busy and self._loop.time() < deadline:
                # A probe queued behind the terminated script runs once it has really stopped.
                # The first result after a termination can be garbage that mini-racer fails to
                # convert (its future then never resolves), hence short attempts.
                try:
                    await asyncio.wait_for(mr.eval_cancelable("0"), RETIRE_PROBE_S)
                except Exception:  # still busy, or a garbled reply: try again
                    continue
                break
            _free(maker)

        asyncio.run_coroutine_threadsafe(free_when_idle(), self._loop)

    def __del__(self) -> None:
        maker = getattr(self, "_maker", None)
        if maker is None:
            return
        # Dropped without close(): free it on the loop thread all the same. No contextlib here:
        # at interpreter teardown module globals may be gone (the exit hook has freed it then).
        try:  # noqa: SIM105
            self._loop.call_soon_threadsafe(_free, maker)
        except Exception:
            pass


def _log_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """mini-racer's callbacks can fail on the loop (a garbled result after a termination);
    the evaluation they belonged to has already failed or is retried, so this is only logged."""
    _log.debug("mini-racer loop: %s", context.get("message"), exc_info=context.get("exception"))


def _free(maker: AbstractContextManager[MiniRacer]) -> None:
    """On the loop thread: free one context (once)."""
    if _live.pop(id(maker), None) is not None:
        maker.__exit__(None, None, None)


def _shutdown() -> None:
    global _loop, _thread
    loop, thread = _loop, _thread
    _loop = _thread = None
    if loop is None or thread is None or loop.is_closed():
        return

    async def free_all() -> None:
        for maker in list(_live.values()):
            with contextlib.suppress(Exception):
                _free(maker)

    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(free_all(), loop).result(timeout=RETIRE_WAIT_S)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    if not thread.is_alive():
        loop.close()
