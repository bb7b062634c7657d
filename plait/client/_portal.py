"""The synchronous client's event loop: one thread of its own, so a blocking call works the
same in a script and inside a loop that is already running (Jupyter's, an async web app's).

Every call of the synchronous client runs as a coroutine on this loop and the caller's thread
waits for it; the engine, its store and its tasks all live on this one thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


class Portal:
    """A loop on a daemon thread, started on first use and stopped by `close`."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the portal's loop and wait for its result (or its exception)."""
        loop = self._running()
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("a synchronous client method was called from its own loop; use AsyncClient there")
        return asyncio.run_coroutine_threadsafe(coroutine, loop).result()

    def iterate(self, iterator: AsyncIterator[T]) -> Iterator[T]:
        """`iterator`'s items, each fetched on the portal's loop; closed when the caller stops."""
        try:
            while True:
                try:
                    yield self.call(_next(iterator))
                except StopAsyncIteration:
                    return
        finally:
            if self._loop is not None and not self._loop.is_closed():
                self.call(_close(iterator))

    def close(self) -> None:
        """Stop the loop and its thread (after the client closed what runs on it)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                started = threading.Event()
                thread = threading.Thread(target=_serve, args=(loop, started), name="plait-client", daemon=True)
                thread.start()
                started.wait()
                self._loop, self._thread = loop, thread
            return self._loop


def _serve(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(started.set)
    loop.run_forever()


async def _next(iterator: AsyncIterator[T]) -> T:
    return await anext(iterator)


async def _close(iterator: AsyncIterator[Any]) -> None:
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()
