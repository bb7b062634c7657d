"""The one thread per process that kills evaluator processes past their deadline, and does the
slow chores off the threads that wait for answers: reaping ended processes, and keeping a
spare process started per memory limit in use, so that a place whose process was killed gets a
started one at once. Watching a request costs a lock and, only when it is due before every
other, a wake-up."""

from __future__ import annotations

import contextlib
import functools
import math
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from plait.sandbox._process import ChildProcess

if TYPE_CHECKING:
    from plait.sandbox._evaluator import Evaluator

REAP_S = 5.0
"""How long a process whose pipes are closed may take to end before it is killed."""
REAP_POLL_S = 0.05


class Supervisor:
    """The watchdog and chores thread (see the module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._watched: dict[Evaluator, float] = {}
        self._chores: list[Callable[[], object]] = []
        self._reaping: dict[subprocess.Popen[bytes], float] = {}
        self._spares: dict[int, ChildProcess] = {}
        self._wake_at = math.inf
        threading.Thread(target=self._run, name="plait-js-watchdog", daemon=True).start()

    def spare(self, memory_mb: int) -> ChildProcess | None:
        """A process started ahead of need (None: none yet); another is started in its place."""
        with self._cond:
            process = self._spares.pop(memory_mb, None)
            self._chores.append(functools.partial(self._restock, memory_mb))
            self._cond.notify()
        return process if process is not None and process.alive else None

    def _restock(self, memory_mb: int) -> None:
        if memory_mb not in self._spares:
            fresh = ChildProcess(memory_mb)
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
