"""Evaluations off the event loop, contexts freed, and a timed-out script never keeps the
interpreter alive (FIELD-NOTES: mini-racer could hang at exit after a timeout)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time

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


def test_importing_the_package_does_not_load_v8() -> None:
    code = "import sys, plait.sandbox; print('py_mini_racer' in sys.modules)"
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
    """mini-racer 0.14.1 segfaults when contexts are created while other threads use the
    library; every call goes through one thread (`_host.py`). In a subprocess: a crash must fail
    this test, not kill the test run."""
    proc = subprocess.run([sys.executable, "-c", CONCURRENT_SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "ok"


def test_a_fatal_v8_allocation_kills_an_in_process_sandbox() -> None:
    """Why the engine evaluates in sandbox processes: `'x'.repeat(2 ** 28).split('')` asks V8
    for a FixedArray beyond its maximum size, and V8 aborts the whole process ("Fatal JavaScript
    invalid size error") before any limit can stop it."""
    code = (
        "from plait.sandbox import JsSandbox, SandboxError\n"
        "with JsSandbox() as box:\n"
        "    try:\n"
        "        box.evaluate(\"'x'.repeat(2 ** 28).split('')\", {}, timeout_s=2)\n"
        "    except SandboxError:\n"
        "        pass\n"
        "print('survived', flush=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "survived" not in proc.stdout
    assert "Fatal JavaScript invalid size error" in proc.stderr


def test_a_process_sandbox_survives_it_and_keeps_evaluating() -> None:
    from plait.sandbox import JsMemoryError, ProcessSandbox

    with ProcessSandbox(workers=1) as box:
        assert box.evaluate("input.n + 1", {"input": {"n": 1}}) == 2
        # The child's OS memory limit stops the 256 MB string before V8's size check aborts.
        with pytest.raises(JsMemoryError, match=r"memory limit of 64 MB \(Fatal JavaScript out of memory"):
            box.evaluate("'x'.repeat(2 ** 28).split('')", {}, timeout_s=2)
        assert box.evaluate("input.n + 1", {"input": {"n": 2}}) == 3  # a new process serves the next one
        assert box.call("(a, b) => a * b", 6, 7) == 42
