"""One place of a pool (`_pool.py`): an evaluator process held by one caller at a time, its
request's wall-clock deadline, and its replacement when it dies.

Whoever holds the place is the only one talking to its process, one request at a time. The
process is taken from the supervisor's spares (started ahead of need) or started on the spot;
a dead one is closed when its holder is done, and the next request takes another. When a
request is sent its deadline is `limit + KILL_GRACE_S` from then (from the moment the process
is ready, if it is still starting), and the supervisor kills a process whose request passes it
(`_supervisor.py`). QuickJS's own interrupt (CPU time) ends the ordinary runaway sooner; the
kill is for the builtins it does not reach and for a host too loaded to give the process its
CPU. The requester sees the pipe close and reports a timeout.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import overload

from plait.sandbox import _protocol as wire
from plait.sandbox._process import QUICK_S, ChildProcess, Frame, ProcessGone, Reason
from plait.sandbox._supervisor import supervisor

KILL_GRACE_S = 0.05
"""Past a request's limit, how long the watchdog lets the process answer before killing it:
within it, QuickJS's own interruption answers normally (and the process lives on)."""
STARTUP_S = 60.0
"""How long a new process may take to become ready before it is killed (a loaded host starts
an interpreter in a fraction of a second)."""
SAFETY_S = 5.0
"""How long past the watchdog's kill a synchronous reader waits on its own before it kills."""


class Evaluator:
    """One place in a pool: a process started on demand, one request at a time, replaced when
    it dies. The holder of the place calls `request_sync`/`request_async` (or, for a prompt
    script, `begin`/`send`/`receive`/`end`); the supervisor may kill its process at any time."""

    def __init__(self, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self._process: ChildProcess | None = None
        self._lock = threading.Lock()
        """Guards the process handle and the deadline against the supervisor."""
        self._next_id = 0
        self._limit = 0.0
        self.deadline: float | None = None
        self.began: float | None = None
        """When the request being served started to count (its process ready), for its holder."""
        self.busy = False
        self.retired = False
        self.quick = False
        """Whether the last reply came within `QUICK_S`: then the next is looked for before sleeping."""

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.popen.pid if process is not None and process.alive else None

    # --- one request ----------------------------------------------------------------------------

    def request_sync(self, op: int, limit: float, max_output: int, a: str, b: str = "", c: str | bytes = "") -> Frame:
        """Send one request and wait for its reply on this thread; ProcessGone when the process
        ended first (killed at the deadline, or crashed)."""
        process, frame = self._frame(op, limit, max_output, a, b, c)
        try:
            self.arm(limit)
            process.write_sync(frame)
            sent = time.monotonic()
            while True:
                reply = process.read_sync(self._safety(), quick=self.quick)
                if reply is not None:
                    self.quick = time.monotonic() - sent < QUICK_S
                    return self._checked(process, reply)
                if self.deadline is None or time.monotonic() >= self.deadline:
                    process.kill("deadline")  # the watchdog should have: do it here
        except BaseException:
            if process.alive:
                process.kill("cancelled")
            raise
        finally:
            self.disarm()

    async def request_async(
        self, op: int, limit: float, max_output: int, a: str, b: str = "", c: str | bytes = "", *, alone: bool = False
    ) -> Frame:
        """Send one request and await its reply (the running loop reads it); cancelling kills the
        process if it has not answered yet, so the place is free at once. `alone`: no other
        request of the caller's is in flight, so a quick reply may be looked for before going
        back to the loop (`QUICK_S`)."""
        loop = asyncio.get_running_loop()
        process = self._process
        if (process is None or not process.alive) and self._ensure(spawn=False) is None:
            await loop.run_in_executor(None, self._ensure)  # no spare: starting a process takes a fork
        process, frame = self._frame(op, limit, max_output, a, b, c)
        waiter: asyncio.Future[Frame] = loop.create_future()
        process.waiter = waiter
        try:
            process.attach(loop)
            self.arm(limit)
            await process.write_async(frame)
            sent = time.monotonic()
            if alone and self.quick:
                reply = process.read_now(sent + QUICK_S)
                if reply is not None:
                    return self._checked(process, reply)
            reply = await waiter
            self.quick = time.monotonic() - sent < QUICK_S
            return self._checked(process, reply)
        except BaseException:
            answered = waiter.done() and not waiter.cancelled() and waiter.exception() is None
            if not answered and process.alive:  # (cancelling the task cancels `waiter` too)
                process.kill("cancelled")
            raise
        finally:
            process.waiter = None
            self.disarm()

    def _frame(
        self, op: int, limit: float, max_output: int, a: str, b: str, c: str | bytes
    ) -> tuple[ChildProcess, bytes]:
        process = self._ensure()
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF or 1
        return process, wire.request(self._next_id, op, limit, max_output, a, b, c)

    def _checked(self, process: ChildProcess, reply: Frame) -> Frame:
        if reply[0] != self._next_id:  # never another request's answer
            process.kill("crashed")
            raise ProcessGone("crashed", f"it answered request {reply[0]} instead of {self._next_id}")
        return reply

    # --- a conversation (prompt scripts) -----------------------------------------------------------

    def begin(self, op: int, limit: float, max_output: int, a: str, b: str = "", c: str | bytes = "") -> int:
        """Send the request that opens a conversation; its id."""
        process, frame = self._frame(op, limit, max_output, a, b, c)
        self.arm(limit)
        process.write_sync(frame)
        return self._next_id

    def send(self, op: int, a: str = "") -> None:
        process = self._ensure_alive()
        process.write_sync(wire.request(self._next_id, op, 0.0, 0, a))

    def receive(self, until: float) -> Frame | None:
        """The next frame of the conversation, or None at `until`."""
        process = self._ensure_alive()
        reply = process.read_sync(min(until, self._safety()))
        return None if reply is None else self._checked(process, reply)

    def kill(self, reason: Reason) -> None:
        process = self._process
        if process is not None:
            process.kill(reason)

    def end(self) -> None:
        self.disarm()

    # --- the process ----------------------------------------------------------------------------

    @overload
    def _ensure(self) -> ChildProcess: ...

    @overload
    def _ensure(self, *, spawn: bool) -> ChildProcess | None: ...

    def _ensure(self, *, spawn: bool = True) -> ChildProcess | None:
        """The place's live process: its own, else a spare, else (`spawn`) a new one."""
        process = self._process
        if process is not None and process.alive:
            return process
        with self._lock:
            process = self._process
            if process is not None and process.alive:
                return process
            if process is not None:
                self._process = None
                process.close(supervisor())
            process = supervisor().spare(self.memory_mb)
            if process is None:
                if not spawn:
                    return None
                process = ChildProcess(self.memory_mb)
            process.on_ready = self._ready
            self._process = process
            return process

    def _ensure_alive(self) -> ChildProcess:
        process = self._process
        if process is None:
            raise ProcessGone("crashed", "no process")
        return process

    def after(self) -> None:
        """The holder is done: a dead process is closed (the next request takes a spare), a
        retired place's process is stopped."""
        process = self._process
        if process is None or (process.alive and not self.retired):
            return
        with self._lock:
            process = self._process
            if process is not None and (not process.alive or self.retired):
                self._process = None
                process.close(supervisor())

    def stop(self) -> None:
        """Retire the place: its process ends now if idle, else when its request is over."""
        self.retired = True
        if not self.busy:
            self.after()

    # --- the watchdog -----------------------------------------------------------------------------

    def arm(self, limit: float) -> None:
        """Watch the request just sent: killed at `limit` + grace from now, or from readiness."""
        process = self._process
        ready = process is not None and process.notice_ready()
        with self._lock:
            self._limit = limit
            if ready:
                self.began = time.monotonic()
                self.deadline = self.began + limit + KILL_GRACE_S
            else:
                self.began = None
                self.deadline = (process.started_at if process else time.monotonic()) + STARTUP_S
            deadline = self.deadline
        supervisor().watch(self, deadline)

    def disarm(self) -> None:
        with self._lock:
            self.deadline = None
        supervisor().unwatch(self)

    def _ready(self) -> None:
        """The process became ready: a request waiting for it has its whole limit from now."""
        with self._lock:
            if self.deadline is None:
                return
            self.began = time.monotonic()
            self.deadline = deadline = self.began + self._limit + KILL_GRACE_S
        supervisor().watch(self, deadline)

    def expire(self, now: float) -> None:
        """From the supervisor: kill the process if its request is past its deadline."""
        with self._lock:
            process = self._process
            if self.deadline is None or now < self.deadline or process is None:
                return
            self.deadline = None
            process.kill("deadline" if process.ready else "startup")

    def _safety(self) -> float:
        deadline = self.deadline
        return (deadline if deadline is not None else time.monotonic()) + SAFETY_S
