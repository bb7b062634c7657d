"""The event loop Plait's own processes run on: uvloop where it is installed, asyncio's otherwise.

Two reasons, both measured (docs/performance.md, W2). asyncio's epoll selector rounds every wait
up to a whole millisecond, so a timer or a socket that becomes ready while the loop is idle is
seen up to 1 ms late; a model call that ends then holds its concurrency slot that much longer,
which with many short calls costs a measurable share of the wall time with no engine work at
all (docs/performance.md, "Run 6"). uvloop (libuv) wakes within the millisecond and runs callbacks, futures
and tasks in C. Everything Plait does also runs on the plain asyncio loop (the tests run there);
`PLAIT_LOOP=asyncio` chooses it for Plait's commands too, e.g. to debug with asyncio's debug mode.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def available() -> list[str]:
    """The loops this machine can run, the preferred first: "uvloop" (where installed), "asyncio"."""
    try:
        import uvloop  # noqa: F401
    except ImportError:  # not installed (Windows has no uvloop)
        return ["asyncio"]
    return ["uvloop", "asyncio"]


def loop_name() -> str:
    """The loop `run` uses: "uvloop" or "asyncio"."""
    if os.environ.get("PLAIT_LOOP", "").strip().lower() == "asyncio":
        return "asyncio"
    return available()[0]


def run(main: Coroutine[Any, Any, T], loop: str | None = None) -> T:
    """`asyncio.run(main)` on the loop named `loop` (one of `available()`), by default `loop_name()`."""
    if (loop or loop_name()) == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
