"""Builtins QuickJS cannot interrupt, and hosts that give an evaluation no CPU: every evaluation
still ends at its wall-clock limit (its process is killed), nothing of it holds an event loop,
the caller's place is free again at once when it gives up, and the next evaluation is answered
by a new process.

Each of the expressions below runs for seconds to minutes of CPU in QuickJS with a 50 ms time
limit (measured: `indexOf` 34-42 s, `split` 62 s, `replace` 68 s, BigInt `toString` 2.4 s of CPU),
because the interrupt handler is checked between bytecodes, not inside these builtins. The
bounds asserted are generous (a second and a half past a 0.3 s limit), never tight timers: what
they tell apart is "killed at its limit" from "ran until the builtin returned"."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

from plait.sandbox import JsSandbox, JsTimeoutError

LIMIT = 0.3
SLACK = 1.5
"""Generous: the guarantee is the limit plus 0.1 s; the bound only has to be far below what the
builtins take without the kill."""

BUILTINS = {
    "indexOf": "'a'.repeat(200000).indexOf('a'.repeat(100000) + 'b')",
    "includes": "'a'.repeat(200000).includes('a'.repeat(100000) + 'b')",
    "split": "'a'.repeat(200000).split('a'.repeat(100000) + 'b').length",
    "replaceAll": "'a'.repeat(200000).replaceAll('a'.repeat(100000) + 'b', '').length",
    "replace": "'a'.repeat(200000).replace('a'.repeat(100000) + 'b', '').length",
    "BigInt toString": "(10n ** 300000n).toString().length",
    "in a CODE function": "(() => { const s = 'a'.repeat(200000); return s.includes(s.slice(100000) + 'b') })()",
}
SPIN = "(() => { for (;;) {} })()"


@pytest.mark.parametrize("expression", list(BUILTINS.values()), ids=list(BUILTINS))
def test_an_uninterruptible_builtin_ends_at_the_limit_and_the_next_evaluation_is_answered(
    sandbox: JsSandbox, expression: str
) -> None:
    started = time.monotonic()
    with pytest.raises(JsTimeoutError, match=f"exceeded {LIMIT:g} s"):
        sandbox.evaluate(expression, {}, timeout_s=LIMIT)
    elapsed = time.monotonic() - started
    assert elapsed < LIMIT + SLACK, f"the evaluation ended after {elapsed:.2f} s"
    assert sandbox.evaluate("input.tag", {"input": {"tag": "next"}}) == "next"


def test_an_uninterruptible_call_ends_at_the_limit() -> None:
    with JsSandbox(workers=1) as box:
        started = time.monotonic()
        with pytest.raises(JsTimeoutError):
            box.call("s => s.repeat(2).indexOf(s + 'b')", "a" * 100_000, timeout_s=LIMIT)
        assert time.monotonic() - started < LIMIT + SLACK
        assert box.call("(a, b) => a + b", 1, 2) == 3


def test_limits_are_wall_clock_even_when_the_process_gets_no_cpu() -> None:
    """A stopped process uses no CPU time, so QuickJS's own limit never fires: the watchdog's
    does (a host too loaded to run the process is the same case, less extreme)."""
    with JsSandbox(workers=1, max_workers=1) as box:
        assert box.evaluate("1", {}) == 1
        [pid] = box.child_pids()
        stopper = threading.Timer(0.1, os.kill, (pid, signal.SIGSTOP))
        stopper.start()
        started = time.monotonic()
        with pytest.raises(JsTimeoutError):
            box.evaluate(SPIN, {}, timeout_s=1.0)
        elapsed = time.monotonic() - started
        stopper.join()
        assert elapsed < 1.0 + SLACK, f"the evaluation ended after {elapsed:.2f} s"
        assert box.evaluate("'next'", {}) == "next"


async def _longest_pause(work: asyncio.Future[object], every: float = 0.01) -> float:
    """The longest the event loop went without turning while `work` ran."""
    longest = 0.0
    last = time.monotonic()
    while not work.done():
        await asyncio.sleep(every)
        now = time.monotonic()
        longest = max(longest, now - last)
        last = now
    await work
    return longest


def test_uninterruptible_builtins_never_hold_the_event_loop() -> None:
    async def main() -> tuple[float, list[object], float]:
        with JsSandbox(workers=2, max_workers=4) as box:
            await box.aevaluate("1", {})
            started = time.monotonic()
            attacks = [
                box.aevaluate(expression, {}, timeout_s=LIMIT, owner=f"run{k}")
                for k, expression in enumerate(BUILTINS.values())
            ]
            work = asyncio.ensure_future(asyncio.gather(*attacks, return_exceptions=True))
            pause = await _longest_pause(work)
            return pause, work.result(), time.monotonic() - started

    pause, results, elapsed = asyncio.run(main())
    assert all(isinstance(result, JsTimeoutError) for result in results), results
    assert pause < 0.5, f"the event loop was held {pause:.2f} s"
    # 7 evaluations, 4 processes: two rounds of a limit each, and the new processes' start
    assert elapsed < 2 * LIMIT + 2 * SLACK, f"the evaluations took {elapsed:.2f} s"


def test_cancelling_frees_the_place_of_an_uninterruptible_evaluation_at_once() -> None:
    """One place, held by an evaluation asking for 20 s in a builtin: cancelling it kills its
    process, and another owner's evaluation is answered at once."""

    async def main() -> float:
        with JsSandbox(workers=1, max_workers=1, max_timeout_s=30) as box:
            await box.aevaluate("1", {})
            started = time.monotonic()
            stuck = asyncio.ensure_future(box.aevaluate(BUILTINS["indexOf"], {}, timeout_s=20, owner="A"))
            await asyncio.sleep(0.3)
            stuck.cancel()
            with pytest.raises(asyncio.CancelledError):
                await stuck
            assert await box.aevaluate("input", {"input": "B"}, owner="B") == "B"
            return time.monotonic() - started

    took = asyncio.run(main())
    assert took < 0.3 + SLACK + 1.0, f"the cancelled evaluation held its place: B was answered after {took:.2f} s"


def test_results_never_cross_while_processes_are_killed() -> None:
    results: dict[str, list[object]] = {}
    killed: list[BaseException] = []
    with JsSandbox(workers=2, max_workers=4) as box:

        def run(owner: str) -> None:
            got = results.setdefault(owner, [])
            for n in range(30):
                got.append(box.evaluate("input.tag + ':' + input.n", {"input": {"tag": owner, "n": n}}, owner=owner))

        def havoc() -> None:
            for expression in list(BUILTINS.values())[:4]:
                try:
                    box.evaluate(expression, {}, timeout_s=LIMIT, owner="havoc")
                except JsTimeoutError as exc:
                    killed.append(exc)

        threads = [threading.Thread(target=run, args=(f"run{k}",)) for k in range(3)]
        threads.append(threading.Thread(target=havoc))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert len(killed) == 4
    assert len(results) == 3
    for owner, got in results.items():
        assert got == [f"{owner}:{n}" for n in range(30)]
