"""Evaluations off the event loop (in evaluator processes), contexts replaced, and a timed-out
script never keeps the interpreter alive."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from plait.sandbox import JsSandbox, JsTimeoutError

SLOW = (
    "(() => { const start = Date.now(), end = start + ms; while (Date.now() < end) {} return [start, Date.now()] })()"
)


def test_aevaluate_does_not_block_the_event_loop() -> None:
    """Two slow evaluations run at the same time (their busy intervals overlap), and a
    coroutine that only needs the event loop finishes long before them."""

    async def main() -> tuple[list[list[float]], float, float, object]:
        with JsSandbox(timeout_s=5.0, workers=2) as box:
            await asyncio.gather(box.aevaluate("1", {}), box.aevaluate("2", {}))  # both contexts exist
            finished: dict[str, float] = {}

            async def slow(name: str) -> list[float]:
                interval: list[float] = await box.aevaluate(SLOW, {"ms": 400})
                finished[name] = time.perf_counter()
                return interval

            async def fast() -> None:
                for _ in range(10):
                    await asyncio.sleep(0.01)
                finished["fast"] = time.perf_counter()

            first, second, _, summed = await asyncio.gather(
                slow("a"), slow("b"), fast(), box.acall("(a, b) => a + b", 1, 2)
            )
            return [first, second], finished["fast"], min(finished["a"], finished["b"]), summed

    (first, second), fast_done, slow_done, summed = asyncio.run(main())
    assert summed == 3
    assert max(first[0], second[0]) < min(first[1], second[1]), (
        f"the slow evaluations did not overlap: {first} {second}"
    )
    assert fast_done < slow_done, "the fast coroutine waited for a slow evaluation"


def test_async_timeout_replaces_the_worker_context() -> None:
    async def main() -> list[object]:
        with JsSandbox(timeout_s=0.2, workers=1) as box:
            with pytest.raises(JsTimeoutError):
                await box.aevaluate("(() => { for (;;) {} })()", {})
            return [await box.aevaluate("input.a", {"input": {"a": 5}}), await box.acall("x => x", "ok")]

    assert asyncio.run(main()) == [5, "ok"]


def test_scope_is_copied_before_the_evaluation_leaves_the_event_loop() -> None:
    async def main() -> object:
        with JsSandbox() as box:
            scope = {"input": {"a": 1}}
            pending = asyncio.ensure_future(box.aevaluate("input.a", scope))
            await asyncio.sleep(0)  # the coroutine has started: the worker thread has its own copy
            scope["input"]["a"] = 2
            return await pending

    assert asyncio.run(main()) == 1


def test_sync_evaluate_inside_a_running_loop() -> None:
    async def main() -> object:
        with JsSandbox(timeout_s=0.2) as box:
            with pytest.raises(JsTimeoutError):
                box.evaluate("(() => { for (;;) {} })()", {})
            return box.evaluate("1 + 1", {})

    assert asyncio.run(main()) == 2


EXIT_SCRIPT = """
import time
from plait.sandbox import JsSandbox, JsTimeoutError

box = JsSandbox(timeout_s=0.2)
for expression in {expressions!r}:
    try:
        box.evaluate(expression, {{}})
    except JsTimeoutError:
        pass
    else:
        raise SystemExit("no timeout")
{close}
print("done", flush=True)
"""


@pytest.mark.parametrize("close", ["box.close()", "# left open: the atexit hook closes it"])
def test_process_exits_promptly_after_a_timeout(close: str) -> None:
    expressions = [
        "(() => { for (;;) {} })()",
        "(async () => { await 0; for (;;) {} })(), 1",  # still spinning after the result
    ]
    script = textwrap.dedent(EXIT_SCRIPT).format(expressions=expressions, close=close)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    assert elapsed < 5.0, f"the interpreter took {elapsed:.1f} s to exit"


def test_importing_the_package_does_not_load_quickjs() -> None:
    code = "import sys, plait.sandbox; print('_quickjs' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "False", out.stderr


CONCURRENT_SCRIPT = """
import threading
from plait.sandbox import JsSandbox, JsTimeoutError

def work(k):
    for round in range(6):
        with JsSandbox(timeout_s=0.05) as box:
            assert box.evaluate("input + 1", {"input": k}) == k + 1
            if round % 2:
                try:
                    box.evaluate("(() => { for (;;) {} })()", {})
                except JsTimeoutError:
                    pass
            assert box.call("x => x * 2", k) == 2 * k

threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("ok", flush=True)
"""


def test_contexts_created_concurrently() -> None:
    """Each QuickJS context is created and used on one thread; many sandboxes on many threads at
    once, with timeouts, never share one. In a subprocess: a crash must fail this test, not kill
    the test run."""
    proc = subprocess.run([sys.executable, "-c", CONCURRENT_SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize(
    "expression",
    [
        "'x'.repeat(2 ** 28).split('')",  # made V8 abort its process ("invalid size error")
        "new Array(2 ** 28).fill(0)",
        "(() => { const a = []; for (;;) a.push(new Uint8Array(1 << 20)); })()",
    ],
)
def test_allocations_that_abort_other_engines_fail_the_evaluation_only(expression: str) -> None:
    """In a subprocess, so that a crash fails this test instead of the test run."""
    code = (
        "from plait.sandbox import JsSandbox, JsMemoryError\n"
        "with JsSandbox(workers=1) as box:\n"
        "    try:\n"
        f"        box.evaluate({expression!r}, {{}}, timeout_s=5)\n"
        "    except JsMemoryError as error:\n"
        "        print('memory error:', error, flush=True)\n"
        "    print('next:', box.evaluate('input.n + 1', {'input': {'n': 1}}), flush=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "memory error: expression exceeded the memory limit of 64 MB" in proc.stdout
    assert "next: 2" in proc.stdout


async def _longest_pause(work: Any, *, every: float = 0.005, ticks: int = 30) -> float:
    """The longest the event loop went without turning while `work` (a coroutine) ran."""
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        for _ in range(ticks):
            await asyncio.sleep(every)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticking = asyncio.ensure_future(ticker())
    await asyncio.sleep(2 * every)
    await work
    await ticking
    return max(gaps)


def test_a_spinning_expression_holds_the_event_loop_only_briefly() -> None:
    """An expression spins in its evaluator process, never on the loop: the loop keeps turning
    (it looks for a quick reply for 0.3 ms at most)."""

    async def main() -> float:
        with JsSandbox(timeout_s=1.0, workers=1) as box:

            async def spin() -> None:
                with pytest.raises(JsTimeoutError):
                    await box.aevaluate("(() => { for (;;) {} })()", {})

            return await _longest_pause(spin(), every=0.01, ticks=40)

    assert asyncio.run(main()) < 0.15


def test_many_evaluations_of_one_spinning_expression_hold_the_loop_once() -> None:
    """Twenty of them started together, in two processes: the loop keeps turning while they
    spin and are killed."""

    async def main() -> float:
        with JsSandbox(timeout_s=0.3, workers=2, max_workers=2) as box:

            async def spin() -> None:
                spinning = [box.aevaluate("(() => { for (;;) {} })()", {}, owner=f"run{k}") for k in range(20)]
                results = await asyncio.gather(*spinning, return_exceptions=True)
                assert all(isinstance(result, JsTimeoutError) for result in results)

            return await _longest_pause(spin())

    assert asyncio.run(main()) < 0.05
