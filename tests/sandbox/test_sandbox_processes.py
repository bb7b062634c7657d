"""Evaluator processes: JavaScript runs in child processes with an empty environment and their
own limits, a process that dies is replaced (its evaluation sent again once), and no evaluator
outlives Plait, however Plait ends."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from plait.sandbox import JsRuntimeError, JsSandbox, _evaluator
from plait.sandbox._supervisor import supervisor

BUSY = "(() => { const end = Date.now() + ms; while (Date.now() < end) {} return 'done' })()"
UNINTERRUPTIBLE = "'a'.repeat(200000).indexOf('a'.repeat(100000) + 'b')"
"""A string search QuickJS's interrupt never reaches: tens of seconds of CPU unless killed."""


def _gone(pid: int) -> bool:
    """The process has ended (a zombie nobody reaped counts: it runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _wait_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [pid for pid in pids if not _gone(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if not _gone(pid)]


def test_evaluations_run_in_child_processes_with_an_empty_environment_and_limits() -> None:
    os.environ["PLAIT_TEST_SECRET"] = "do-not-leak"
    try:
        with JsSandbox(workers=1, max_workers=1) as box:
            assert box.evaluate("input.n + 1", {"input": {"n": 1}}) == 2
            [pid] = box.child_pids()
            assert pid != os.getpid()
            assert Path(f"/proc/{pid}/environ").read_bytes() == b""
            assert os.readlink(f"/proc/{pid}/cwd") == "/"
            limits = Path(f"/proc/{pid}/limits").read_text()
            address_space = next(line for line in limits.splitlines() if line.startswith("Max address space"))
            assert "unlimited" not in address_space, address_space
            file_size = next(line for line in limits.splitlines() if line.startswith("Max file size"))
            assert file_size.split()[3:5] == ["0", "0"], file_size
    finally:
        del os.environ["PLAIT_TEST_SECRET"]


def test_an_evaluator_killed_from_outside_is_replaced_and_its_evaluation_sent_again() -> None:
    with JsSandbox(workers=1, max_workers=1, timeout_s=5) as box:
        assert box.evaluate("1", {}) == 1
        [first] = box.child_pids()
        os.kill(first, signal.SIGKILL)  # idle: the next evaluation finds it dead
        assert box.evaluate("input", {"input": "after an idle death"}) == "after an idle death"
        [second] = box.child_pids()
        assert second != first
        killer = threading.Timer(0.3, os.kill, (second, signal.SIGKILL))
        killer.start()  # in the middle of an evaluation: it is sent again to a new process
        assert box.evaluate(BUSY, {"ms": 1000}) == "done"
        killer.join()
        [third] = box.child_pids()
        assert third != second


def test_an_evaluation_whose_process_dies_twice_fails_saying_so() -> None:
    with JsSandbox(workers=1, max_workers=1, timeout_s=10) as box:
        assert box.evaluate("1", {}) == 1
        stop = threading.Event()

        def kill_every_process() -> None:
            while not stop.is_set():
                for pid in box.child_pids():
                    if time.monotonic() - started > 0.3:
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.05)

        started = time.monotonic()
        killer = threading.Thread(target=kill_every_process)
        killer.start()
        try:
            with pytest.raises(JsRuntimeError, match=r"process ended during the evaluation .*signal 9.*twice"):
                box.evaluate(BUSY, {"ms": 5000})
        finally:
            stop.set()
            killer.join()
        assert box.evaluate("'next'", {}) == "next"


def test_a_spare_started_long_before_its_first_evaluation_is_not_taken_for_one_that_did_not_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A spare process waits, ready, for as long as nobody needs it; its start-up limit must not
    count that wait."""
    memory_mb = 41  # spares are kept per memory limit: this test's own
    with JsSandbox(workers=1, max_workers=1, max_memory_mb=memory_mb) as box:
        assert box.evaluate("1", {}) == 1  # taking a process stocks a spare behind it
    monkeypatch.setattr(_evaluator, "STARTUP_S", 0.5)  # only now: the first process had the usual limit
    spare = None
    deadline = time.monotonic() + 60
    while spare is None and time.monotonic() < deadline:
        spare = supervisor()._spares.get(memory_mb)
        time.sleep(0.05)
    assert spare is not None, "no spare was started"
    assert select.select([spare.from_child], [], [], 60)[0], "the spare never said it was ready"
    time.sleep(0.6)  # now past its start-up limit, counted from its start
    with JsSandbox(workers=1, max_workers=1, max_memory_mb=memory_mb) as box:
        assert box.evaluate("input + 1", {"input": 1}) == 2
        assert box.child_pids() == [spare.popen.pid]


PARENT = """
import sys, threading, time
from plait.sandbox import JsSandbox

box = JsSandbox(workers=2, max_timeout_s=60)
assert box.evaluate("1", {{}}) == 1

def spin(owner):
    try:
        box.evaluate({expression!r}, {{}}, timeout_s=50, owner=owner)
    except Exception:
        pass

for owner in ("a", "b"):
    threading.Thread(target=spin, args=(owner,), daemon=True).start()
while len(box.child_pids()) < 2:
    time.sleep(0.05)
time.sleep(0.3)
print(" ".join(map(str, box.child_pids())), flush=True)
{then}
"""


def _parent(then: str) -> subprocess.Popen[str]:
    code = textwrap.dedent(PARENT).format(expression=UNINTERRUPTIBLE, then=then)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_killed_parent_leaves_no_evaluator() -> None:
    parent = _parent("time.sleep(120)")
    try:
        assert parent.stdout is not None
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(pids) == 2  # each in a builtin that does not stop by itself
        parent.kill()
        parent.wait(timeout=10)
        assert _wait_gone(pids, 10) == [], "evaluators outlived their parent"
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_parent_that_exits_does_not_wait_for_a_spinning_evaluator_and_leaves_none() -> None:
    started = time.monotonic()
    parent = _parent("print('exiting', flush=True)")
    try:
        assert parent.stdout is not None
        pids = [int(pid) for pid in parent.stdout.readline().split()]
        assert parent.stdout.readline().strip() == "exiting"
        assert parent.wait(timeout=30) == 0
        assert time.monotonic() - started < 20, "the interpreter waited for the evaluation (it asked for 50 s)"
        assert _wait_gone(pids, 10) == [], "evaluators outlived their parent"
    finally:
        if parent.poll() is None:
            parent.kill()
