"""Sharing the sandbox: one run cannot deny it to others, a cancelled caller returns at once, and
closing never waits for a spinning expression."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from plait.sandbox import JsSandbox, JsTimeoutError, SandboxError

SPIN = "(() => { for (;;) {} })()"


def test_a_run_spinning_everywhere_does_not_delay_another_runs_evaluation() -> None:
    async def main() -> float:
        with JsSandbox(workers=2, max_workers=4, max_timeout_s=30) as box:
            await box.aevaluate("1", {}, owner="warm")
            spinning = [asyncio.ensure_future(box.aevaluate(SPIN, {}, timeout_s=3, owner="A")) for _ in range(12)]
            await asyncio.sleep(0.3)  # A holds its share and queues the rest
            start = time.monotonic()
            assert await box.aevaluate("input.tag", {"input": {"tag": "B"}}, owner="B") == "B"
            elapsed = time.monotonic() - start
            for task in spinning:
                task.cancel()
            await asyncio.gather(*spinning, return_exceptions=True)
            return elapsed

    elapsed = asyncio.run(main())
    assert elapsed < 1.5, f"owner B waited {elapsed:.1f} s behind owner A's 3 s expressions"


def test_cancelling_returns_at_once_and_queued_evaluations_never_start() -> None:
    async def main() -> tuple[float, JsSandbox]:
        box = JsSandbox(workers=2, max_workers=2)
        tasks = [asyncio.ensure_future(box.aevaluate(SPIN, {}, timeout_s=1, owner="A")) for _ in range(6)]
        await asyncio.sleep(0.2)
        start = time.monotonic()
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(result, asyncio.CancelledError) for result in results)
        return time.monotonic() - start, box

    took, box = asyncio.run(main())
    try:
        assert took < 0.2, f"cancelling waited {took:.2f} s for the evaluations"
        # The two running spinners end at their 1 s limit; the four queued ones never started,
        # so the next evaluation is served well before 6 x 1 s.
        start = time.monotonic()
        assert box.evaluate("'next'", {}) == "next"
        assert time.monotonic() - start < 2.5
    finally:
        box.close()


def test_close_returns_at_once_and_refuses_the_waiting() -> None:
    box = JsSandbox(workers=2, max_workers=2)
    errors: list[BaseException] = []

    def spin() -> None:
        try:
            box.evaluate(SPIN, {}, timeout_s=1)
        except SandboxError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=spin) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)
    start = time.monotonic()
    box.close()
    elapsed = time.monotonic() - start
    for thread in threads:
        thread.join(timeout=5)
    assert elapsed < 0.2, f"close() took {elapsed:.1f} s"
    assert not any(thread.is_alive() for thread in threads)
    assert len(errors) == 3
    # The two running ones stop at their limit; the one still waiting for a process is refused.
    assert sum(isinstance(exc, JsTimeoutError) for exc in errors) == 2
    assert sum("closed" in str(exc) for exc in errors) == 1
    with pytest.raises(SandboxError, match="closed"):
        box.evaluate("1", {})


@pytest.mark.parametrize("owner", ["run-1", None])
def test_sync_calls_take_an_owner(owner: str | None) -> None:
    with JsSandbox(workers=1) as box:
        assert box.call("(a, b) => a + b", 1, 2, owner=owner) == 3
        assert box.evaluate("input", {"input": [owner]}, owner=owner) == [owner]
