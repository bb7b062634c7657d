"""An evaluator process seen from Plait: starting it, its pipes, and the frames on them.

`ChildProcess` is one started process (`sys.executable -I -S -c BOOT`, the entry in
`_child.py`: a fresh interpreter, never a fork of the server, with an empty environment and `/`
as its directory). Replies are read where the request came from: an async request registers the
pipe with the running event loop (once per process and loop) and awaits a future the reader
fills; a sync request reads the pipe on its own thread. Neither evaluates anything: the event
loop writes a frame and is woken by the reply, like any socket. `Evaluator` (`_evaluator.py`)
holds one at a time; `Supervisor` (`_supervisor.py`) kills it at a deadline and reaps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import json
import math
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from plait.model.limits import MAX_DEPTH
from plait.sandbox import _protocol as wire

if TYPE_CHECKING:
    from plait.sandbox._supervisor import Supervisor

QUICK_S = 0.0003
"""How long a caller keeps looking for a reply before it sleeps (or, on an event loop, goes
back to the loop), when its process answered that fast last time: a small expression is
answered in tens of µs, and a caller that went to sleep is woken far later than that on a
virtual machine. Never longer: the loop is held this long at most, by a wait, never by
JavaScript."""
Reason = Literal["deadline", "cancelled", "startup", "crashed"]
Frame = tuple[int, int, bytes]
"""(request id, status, body) of one reply."""

_BOOT = (
    "import json, sys; config = json.loads(sys.argv[1]); sys.path[:0] = config['path']; "
    "from plait.sandbox._child import main; main(config)"
)


class ProcessGone(Exception):
    """The process ended before it answered: killed for `reason`, or it crashed."""

    def __init__(self, reason: Reason, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@functools.lru_cache(maxsize=1)
def _child_path() -> list[str]:
    """`sys.path` of an evaluator: Plait's own directory and QuickJS's binding, nothing else."""
    plait_root = str(Path(__file__).resolve().parents[2])
    spec = importlib.util.find_spec("_quickjs")
    if spec is None or spec.origin is None:
        raise RuntimeError("QuickJS (PyPI quickjs-ng) is not installed; install Plait with its dependencies")
    return [plait_root, str(Path(spec.origin).parent)]


class ChildProcess:
    """One started evaluator process: its pipes, what it has sent and not yet been read, and
    which event loop reads it."""

    def __init__(self, memory_mb: int) -> None:
        config = json.dumps({"memory_mb": memory_mb, "max_depth": MAX_DEPTH, "path": _child_path()})
        self.popen = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _BOOT, config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            cwd="/",
            close_fds=True,
        )
        assert self.popen.stdin is not None
        assert self.popen.stdout is not None
        self.to_child = self.popen.stdin.fileno()
        self.from_child = self.popen.stdout.fileno()
        os.set_blocking(self.to_child, False)
        os.set_blocking(self.from_child, False)
        self.started_at = time.monotonic()
        self.ready = False
        self.ended = False
        self.killed: Reason | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[Frame] | None = None
        self.reader: asyncio.AbstractEventLoop | None = None
        """The loop whose callback reads the replies now (None: a thread reads them itself)."""
        self.registered: set[asyncio.AbstractEventLoop] = set()
        self._poller = select.poll()
        self._poller.register(self.from_child, select.POLLIN)
        self.on_ready: Callable[[], None] = _nothing
        """Called when the process says it is ready (its place rearms the request's deadline)."""

    @property
    def alive(self) -> bool:
        return not self.ended and self.killed is None

    def kill(self, reason: Reason) -> None:
        """SIGKILL, from any thread; the reader sees the pipe close."""
        if self.killed is None:
            self.killed = reason
        with contextlib.suppress(OSError):
            self.popen.send_signal(signal.SIGKILL)

    def gone(self) -> ProcessGone:
        """Why the pipe closed."""
        if self.killed is not None:
            return ProcessGone(self.killed)
        try:
            code: int | None = self.popen.wait(timeout=0.1)  # it is ending: say how
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            detail = "it closed its output"
        elif code < 0:
            detail = f"it was ended by signal {-code}"
        else:
            detail = f"it exited with code {code}"
        return ProcessGone("crashed", detail)

    # --- frames ---------------------------------------------------------------------------------

    def next_frame(self) -> Frame | None:
        """The next complete reply in the buffer (READY is consumed here), or None."""
        while len(self.buffer) >= wire.REPLY.size:
            request_id, status, size = wire.REPLY.unpack_from(self.buffer)
            end = wire.REPLY.size + size
            if len(self.buffer) < end:
                return None
            body = bytes(self.buffer[wire.REPLY.size : end])
            del self.buffer[:end]
            if status == wire.READY:
                self.ready = True
                self.on_ready()
                continue
            return request_id, status, body
        return None

    def _pull(self) -> bool | None:
        """Move what the pipe holds into the buffer, without waiting: True if something came,
        False if nothing has yet, None when the pipe closed (the process ended)."""
        try:
            data = os.read(self.from_child, 1 << 16)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self.ended = True
            return None
        self.buffer += data
        return True

    def notice_ready(self) -> bool:
        """Whether the process is ready, reading what it has already sent without waiting: a
        spare that said READY long ago, unread, is judged by that, never by when it started."""
        if self.ready or not self.alive:
            return self.ready
        if self._pull() and self.next_frame() is not None:  # a reply before any request: out of step
            self.kill("crashed")
        return self.ready

    def read_sync(self, until: float, *, quick: bool = False) -> Frame | None:
        """The next reply, read on this thread; None at `until` (monotonic); ProcessGone when the
        pipe closes first. `quick`: look for it without sleeping for `QUICK_S` first."""
        self.reader = None  # a loop still registered stops reading (`on_readable`)
        if quick:
            frame = self.read_now(min(until, time.monotonic() + QUICK_S))
            if frame is not None:
                return frame
        while True:
            frame = self.next_frame()
            if frame is not None:
                return frame
            left = until - time.monotonic()
            if left <= 0:
                return None
            if self._poller.poll(math.ceil(min(left, 3600.0) * 1000)) and self._pull() is None:
                raise self.gone()

    def read_now(self, until: float) -> Frame | None:
        """The next reply if it comes before `until` (monotonic), looked for without sleeping
        (the CPU is yielded between looks); None if it has not come by then."""
        while True:
            frame = self.next_frame()
            if frame is not None:
                return frame
            pulled = self._pull()
            if pulled is None:
                raise self.gone()
            if not pulled:
                if time.monotonic() >= until:
                    return None
                os.sched_yield()

    def write_sync(self, frame: bytes) -> None:
        view = memoryview(frame)
        while view:
            try:
                view = view[os.write(self.to_child, view) :]
            except BlockingIOError:
                select.select([], [self.to_child], [], 1.0)
            except OSError:  # a broken pipe: it died
                self.ended = True
                raise self.gone() from None

    # --- on an event loop ------------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Have `loop` read the replies (registered once per loop)."""
        self.reader = loop
        if loop not in self.registered:
            loop.add_reader(self.from_child, self.on_readable, loop)
            self.registered.add(loop)

    def on_readable(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.reader is not loop:  # another loop or a thread reads it now: leave it to them
            self._unregister(loop)
            return
        pulled = self._pull()
        if pulled is None:
            self._unregister(loop)
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_exception(self.gone())
            return
        frame = self.next_frame() if pulled else None
        if frame is None:
            return
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(frame)
        else:  # nobody asked: the process is out of step, and serves nobody again
            self.kill("crashed")

    async def write_async(self, frame: bytes) -> None:
        """Write without blocking the loop: at once when the pipe has room (nearly always),
        else as the process reads."""
        view = memoryview(frame)
        try:
            view = view[os.write(self.to_child, view) :]
        except BlockingIOError:
            pass
        except OSError:
            self.ended = True
            raise self.gone() from None
        if not view:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        rest = [view]

        def writable() -> None:
            try:
                rest[0] = rest[0][os.write(self.to_child, rest[0]) :]
            except BlockingIOError:
                return
            except OSError:
                self.ended = True
                rest[0] = rest[0][:0]
                if not done.done():
                    done.set_exception(self.gone())
            if not rest[0] and not done.done():
                done.set_result(None)

        loop.add_writer(self.to_child, writable)
        try:
            await done
        finally:
            loop.remove_writer(self.to_child)

    # --- the end ---------------------------------------------------------------------------------

    def close(self, supervisor: Supervisor) -> None:
        """Close the pipes (a live process then ends: its stdin hangs up) and reap it later. A
        loop that still watches the pipe lets go of it first, on its own thread."""
        others = []
        current = _running_loop()
        for loop in list(self.registered):
            if loop.is_closed():
                self.registered.discard(loop)
            elif loop is current:
                self._unregister(loop)
            else:
                others.append(loop)
        for loop in others:
            try:
                loop.call_soon_threadsafe(self._release, loop, supervisor)
            except RuntimeError:  # closed meanwhile
                self.registered.discard(loop)
        if not self.registered:
            self._close_pipes(supervisor)

    def _release(self, loop: asyncio.AbstractEventLoop, supervisor: Supervisor) -> None:
        self._unregister(loop)
        if not self.registered:
            self._close_pipes(supervisor)

    def _unregister(self, loop: asyncio.AbstractEventLoop) -> None:
        if loop in self.registered:
            self.registered.discard(loop)
            if not loop.is_closed():
                loop.remove_reader(self.from_child)

    def _close_pipes(self, supervisor: Supervisor) -> None:
        for stream in (self.popen.stdin, self.popen.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        supervisor.reap(self.popen)


def _nothing() -> None:
    return None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
