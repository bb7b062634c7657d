"""Sharing the sandbox: one run cannot deny it to others, cancelling frees its children at once,
and closing never waits for a spinning expression."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from plait.sandbox import ProcessSandbox, SandboxError

SPIN = "(() => { for (;;) {} })()"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rpartition(")")[2].split()[0] not in {"Z", "X"}
    except FileNotFoundError:
        return False


def test_a_run_spinning_everywhere_does_not_delay_another_runs_evaluation() -> None:
    async def main() -> float:
        with ProcessSandbox(workers=2, max_workers=4, max_timeout_s=30) as box:
            await box.aevaluate("1", {}, owner="warm")
            spinning = [asyncio.ensure_future(box.aevaluate(SPIN, {}, timeout_s=25, owner="A")) for _ in range(12)]
            await asyncio.sleep(0.5)  # A holds its share and queues the rest
            start = time.monotonic()
            assert await box.aevaluate("input.tag", {"input": {"tag": "B"}}, owner="B") == "B"
            elapsed = time.monotonic() - start
            for task in spinning:
                task.cancel()
            await asyncio.gather(*spinning, return_exceptions=True)
            return elapsed

    elapsed = asyncio.run(main())
    assert elapsed < 8.0, f"owner B waited {elapsed:.1f} s behind owner A's 25 s expressions"


def test_cancelling_an_evaluation_kills_its_child_and_drops_queued_ones() -> None:
    async def main() -> tuple[list[int], ProcessSandbox]:
        box = ProcessSandbox(workers=2, max_workers=2)
        tasks = [asyncio.ensure_future(box.aevaluate(SPIN, {}, timeout_s=25, owner="A")) for _ in range(6)]
        await asyncio.sleep(1.0)
        pids = box.child_pids()
        assert len(pids) == 2
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(result, asyncio.CancelledError) for result in results)
        return pids, box

    pids, box = asyncio.run(main())
    try:
        deadline = time.monotonic() + 2.0
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not any(_alive(pid) for pid in pids), "a cancelled evaluation's child kept spinning"
        assert box.evaluate("'next'", {}) == "next"
        assert len(box.child_pids()) <= 2  # the queued spinners never started anywhere
    finally:
        box.close()


def test_close_kills_busy_children_at_once() -> None:
    box = ProcessSandbox(workers=2, max_workers=2)
    errors: list[BaseException] = []

    def spin() -> None:
        try:
            box.evaluate(SPIN, {}, timeout_s=25)
        except SandboxError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=spin) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    pids = box.child_pids()
    start = time.monotonic()
    box.close()
    elapsed = time.monotonic() - start
    for thread in threads:
        thread.join(timeout=5)
    assert elapsed < 2.0, f"close() took {elapsed:.1f} s"
    assert not any(thread.is_alive() for thread in threads)
    assert len(errors) == 3
    assert all("closed" in str(exc) for exc in errors)
    assert not any(_alive(pid) for pid in pids)


KILLED_SCRIPT = """
from plait.sandbox import ProcessSandbox
box = ProcessSandbox(workers=2)
box.evaluate("1", {})
print("ready", flush=True)
import time; time.sleep(60)
"""


def test_a_killed_process_leaves_no_sandbox_log_behind(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_SCRIPT], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    time.sleep(0.3)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("plait-js-")] == []


@pytest.mark.parametrize("owner", ["run-1", None])
def test_sync_calls_take_an_owner(owner: str | None) -> None:
    with ProcessSandbox(workers=1) as box:
        assert box.call("(a, b) => a + b", 1, 2, owner=owner) == 3
        assert box.evaluate("input", {"input": [owner]}, owner=owner) == [owner]
