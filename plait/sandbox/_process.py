"""Evaluator processes seen from Plait: starting one, talking to it, and killing it when an
evaluation outlives its deadline.

An `Evaluator` is one place in a pool (`_pool.py`): whoever holds it is the only one talking to
its process, one request at a time. Its process is started on first use and again after it
died (in the background, `Supervisor`), from `sys.executable` with the entry in `_child.py`.

Replies are read where the request came from: an async request registers the process's pipe
with the running event loop (once per process and loop) and awaits a future the reader fills;
a sync request reads the pipe on its own thread. Neither evaluates anything: the event loop
writes a frame and is woken by the reply, like any socket.

Deadlines are wall-clock and kept by one process-wide thread (`Supervisor`): when a request is
sent its deadline is `limit + KILL_GRACE_S` from then (from the moment the process is ready, if
it is still starting), and a process whose request passes it is killed with SIGKILL. QuickJS's
own interrupt (CPU time) ends the ordinary runaway sooner; the kill is for the builtins it does
not reach and for a host too loaded to give the process its CPU. The requester sees the pipe
close and reports a timeout; the place's next request gets a new process.
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
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal, overload

from plait.model.limits import MAX_DEPTH
from plait.sandbox import _protocol as wire

KILL_GRACE_S = 0.05
"""Past a request's limit, how long the watchdog lets the process answer before killing it:
within it, QuickJS's own interruption answers normally (and the process lives on)."""
STARTUP_S = 60.0
"""How long a new process may take to become ready before it is killed (a loaded host starts
an interpreter in a fraction of a second)."""
SAFETY_S = 5.0
"""How long past the watchdog's kill a synchronous reader waits on its own before it kills."""
QUICK_S = 0.0003
"""How long a caller keeps looking for a reply before it sleeps (or, on an event loop, goes
back to the loop), when its process answered that fast last time: a small expression is
answered in tens of µs, and a caller that went to sleep is woken far later than that on a
virtual machine. Never longer: the loop is held this long at most, by a wait, never by
JavaScript."""
REAP_S = 5.0
"""How long a process whose pipes are closed may take to end before it is killed."""
REAP_POLL_S = 0.05

Reason = Literal["deadline", "cancelled", "closed", "startup", "crashed"]
Frame = tuple[int, int, bytes]
"""(request id, status, body) of one reply."""

_BOOT = (
    "import json, sys; config = json.loads(sys.argv[1]); sys.path[:0] = config['path']; "
    "from plait.sandbox._child import main; main(config)"
)


class ProcessGone(Exception):
    """The process ended before it answered: killed for `reason`, or it crashed."""

    def __init__(self, reason: Reason, detail: str = "", *, ready: bool = True) -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
        self.ready = ready
        """Whether the process had become ready: a process that died starting never saw the request."""


@functools.lru_cache(maxsize=1)
def _child_path() -> list[str]:
    """`sys.path` of an evaluator: Plait's own directory and QuickJS's binding, nothing else."""
    plait_root = str(Path(__file__).resolve().parents[2])
    spec = importlib.util.find_spec("_quickjs")
    if spec is None or spec.origin is None:
        raise RuntimeError("QuickJS (PyPI quickjs-ng) is not installed; install Plait with its dependencies")
    return [plait_root, str(Path(spec.origin).parent)]


class _Process:
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
            return ProcessGone(self.killed, ready=self.ready)
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
        return ProcessGone("crashed", detail, ready=self.ready)

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
            if not self._poller.poll(math.ceil(min(left, 3600.0) * 1000)):
                continue
            try:
                data = os.read(self.from_child, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                self.ended = True
                raise self.gone()
            self.buffer += data

    def read_now(self, until: float) -> Frame | None:
        """The next reply if it comes before `until` (monotonic), looked for without sleeping
        (the CPU is yielded between looks); None if it has not come by then."""
        while True:
            frame = self.next_frame()
            if frame is not None:
                return frame
            try:
                data = os.read(self.from_child, 1 << 16)
            except BlockingIOError:
                if time.monotonic() >= until:
                    return None
                os.sched_yield()
                continue
            except OSError:
                data = b""
            if not data:
                self.ended = True
                raise self.gone()
            self.buffer += data

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
        try:
            data = os.read(self.from_child, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.ended = True
            self._unregister(loop)
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_exception(self.gone())
            return
        self.buffer += data
        frame = self.next_frame()
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


class Evaluator:
    """One place in a pool: a process started on demand, one request at a time, replaced when
    it dies. The holder of the place calls `request_sync`/`request_async` (or, for a prompt
    script, `begin`/`send`/`receive`/`end`); the supervisor may kill its process at any time."""

    def __init__(self, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self._process: _Process | None = None
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

    def _frame(self, op: int, limit: float, max_output: int, a: str, b: str, c: str | bytes) -> tuple[_Process, bytes]:
        process = self._ensure()
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF or 1
        return process, wire.request(self._next_id, op, limit, max_output, a, b, c)

    def _checked(self, process: _Process, reply: Frame) -> Frame:
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
    def _ensure(self) -> _Process: ...

    @overload
    def _ensure(self, *, spawn: bool) -> _Process | None: ...

    def _ensure(self, *, spawn: bool = True) -> _Process | None:
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
                process = _Process(self.memory_mb)
            process.on_ready = self._ready
            self._process = process
            return process

    def _ensure_alive(self) -> _Process:
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
        with self._lock:
            self._limit = limit
            if process is not None and process.ready:
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


class Supervisor:
    """The one thread that kills processes past their deadline and does the slow chores off the
    threads that wait for answers: reaping, and starting a spare process per memory limit in
    use, so that a place whose process was killed gets a started one at once. Watching a
    request costs a lock and, only when it is due before every other, a wake-up."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._watched: dict[Evaluator, float] = {}
        self._chores: list[Callable[[], object]] = []
        self._reaping: dict[subprocess.Popen[bytes], float] = {}
        self._spares: dict[int, _Process] = {}
        self._wake_at = math.inf
        threading.Thread(target=self._run, name="plait-js-watchdog", daemon=True).start()

    def spare(self, memory_mb: int) -> _Process | None:
        """A process started ahead of need (None: none yet); another is started in its place."""
        with self._cond:
            process = self._spares.pop(memory_mb, None)
            self._chores.append(functools.partial(self._restock, memory_mb))
            self._cond.notify()
        return process if process is not None and process.alive else None

    def _restock(self, memory_mb: int) -> None:
        if memory_mb not in self._spares:
            fresh = _Process(memory_mb)
            with self._cond:
                self._spares.setdefault(memory_mb, fresh)

    def watch(self, evaluator: Evaluator, deadline: float) -> None:
        with self._cond:
            self._watched[evaluator] = deadline
            if deadline < self._wake_at:
                self._wake_at = deadline
                self._cond.notify()

    def unwatch(self, evaluator: Evaluator) -> None:
        with self._cond:
            self._watched.pop(evaluator, None)

    def later(self, chore: Callable[[], object]) -> None:
        with self._cond:
            self._chores.append(chore)
            self._cond.notify()

    def reap(self, popen: subprocess.Popen[bytes]) -> None:
        """Collect an ending process's exit status (killed if it has not ended within `REAP_S`)."""
        with self._cond:
            self._reaping[popen] = time.monotonic() + REAP_S
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                due = [evaluator for evaluator, deadline in self._watched.items() if deadline <= now]
                for evaluator in due:
                    del self._watched[evaluator]
                chores, self._chores = self._chores, []
                reaping = list(self._reaping.items())
                if not due and not chores:
                    self._wake_at = min(self._watched.values(), default=math.inf)
                    if reaping:
                        self._wake_at = min(self._wake_at, now + REAP_POLL_S)
                    self._cond.wait(None if self._wake_at == math.inf else self._wake_at - now)
                    if not reaping:
                        continue
                else:
                    self._wake_at = -math.inf  # busy: a new deadline needs no wake-up meanwhile
            for evaluator in due:
                evaluator.expire(now)
            for chore in chores:
                with contextlib.suppress(Exception):  # a chore that fails must not stop the watchdog
                    chore()
            self._reap(reaping)

    def _reap(self, reaping: list[tuple[subprocess.Popen[bytes], float]]) -> None:
        now = time.monotonic()
        for popen, give_up in reaping:
            if popen.poll() is None and now < give_up:
                continue
            if popen.returncode is None:
                with contextlib.suppress(OSError):
                    popen.kill()
                continue  # collected on a later round
            with self._cond:
                self._reaping.pop(popen, None)


_supervisor: Supervisor | None = None
_supervisor_lock = threading.Lock()


def supervisor() -> Supervisor:
    """The process-wide supervisor, started on first use."""
    global _supervisor
    found = _supervisor
    if found is not None:
        return found
    with _supervisor_lock:
        if _supervisor is None:
            _supervisor = Supervisor()
        return _supervisor
