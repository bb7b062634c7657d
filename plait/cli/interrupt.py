"""Ctrl-C and SIGTERM while a command drives an engine: stop cleanly once, quit at once the second time.

The first signal cancels the work: the engine gives up the run (the nodes it was executing go back
to `pending`, its lease is released, so another process may resume it), the providers are closed,
which waits for the embedded model's native thread to stop at its next token, and the command
reports `Interrupted`. Only then does the interpreter exit, so llama.cpp is never freed under a
running generation (which is what made Ctrl-C a segfault). The first signal also gives both
signals back to the operating system's default action, so a second one ends the process there
and then, even while the main thread waits in native code (a database lock, a model call): the
kernel ends it, no Python code runs, nothing can crash on the way out. A run stopped that way is
resumed like one whose process was killed."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

EXIT_INTERRUPTED = 130
"""128 + SIGINT, what shells report for a command stopped by Ctrl-C."""
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """The user stopped the command (Ctrl-C or SIGTERM) and the work in progress was given back."""


def run(main: Coroutine[Any, Any, T], *, cleanup: Callable[[], Awaitable[None]] | None = None) -> T:
    """`main` on Plait's event loop, then `cleanup` (whatever happened); raises `Interrupted` when
    the first SIGINT/SIGTERM cancelled it."""
    from plait.engine import eventloop

    return eventloop.run(_guarded(main, cleanup))


async def _guarded(main: Coroutine[Any, Any, T], cleanup: Callable[[], Awaitable[None]] | None) -> T:
    task = asyncio.ensure_future(main)
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        loop = asyncio.get_running_loop()
        for other in SIGNALS:  # the next one is the kernel's to handle: it ends the process at once
            loop.remove_signal_handler(other)
            signal.signal(other, signal.SIG_DFL)
        os.write(2, b"plait: stopping (press Ctrl-C again to quit at once)\n")
        task.cancel()

    _listen(on_signal)
    try:
        return await task
    except asyncio.CancelledError:
        if received and task.cancelled():
            current = asyncio.current_task()
            if current is None or not current.cancelling():  # not ourselves being cancelled from outside
                raise Interrupted from None
        raise
    finally:
        if cleanup is not None:
            await cleanup()


def _listen(handler: Callable[[int], None]) -> None:
    loop = asyncio.get_running_loop()
    for signum in SIGNALS:
        try:
            loop.add_signal_handler(signum, handler, signum)
        except (NotImplementedError, RuntimeError, ValueError):  # no signal handlers here (Windows, a thread)
            return
