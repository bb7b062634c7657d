"""What the JavaScript sandbox costs, step by step (QuickJS in evaluator processes, `plait/sandbox/`).

    .venv/bin/python bench/sandbox.py [--quick]

Prints, in µs unless marked: the first evaluation in a fresh interpreter (importing the sandbox,
starting an evaluator process), starting an evaluator process until it is ready, a new context
in it (lockdown and runner), the pipe round trip of a trivial request, one evaluation and one
call of a small expression from a thread, one `aevaluate` at a time on an event loop (a chain
of TRANSFORM nodes) and 2,000 at once, a 150 KB scope, a kill (an evaluation in a builtin QuickJS
cannot interrupt, stopped at its limit, and the next one answered by a new process), and a
first syntax check.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from plait.sandbox import JsSandbox, JsTimeoutError, check_syntax
from plait.sandbox import _protocol as wire
from plait.sandbox._context import Context
from plait.sandbox._evaluator import Evaluator
from plait.sandbox._process import ChildProcess

SCOPE = {"input": {"text": "a b c"}, "nodes": {"classify": {"label": "bug", "score": 3}}}
EXPRESSION = "({label: nodes.classify.label, next: nodes.classify.score + 1})"
ROWS = {"input": {"rows": [{"id": i, "text": "z" * 60} for i in range(2_000)]}}  # ~150 KB of JSON
UNINTERRUPTIBLE = "'a'.repeat(200000).indexOf('a'.repeat(100000) + 'b')"


def per_call_us(action: Callable[[], object], calls: int) -> float:
    """Median over 5 loops of the µs one call takes."""
    loops = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            action()
        loops.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(loops)


def cold_start_ms(runs: int = 3) -> float:
    code = (
        "import time; t = time.perf_counter(); from plait.sandbox import JsSandbox\n"
        "with JsSandbox() as box: box.evaluate('1', {})\n"
        "print((time.perf_counter() - t) * 1000)"
    )
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
             for _ in range(runs)]  # fmt: skip
    return statistics.median(times)


def process_start_ms() -> float:
    """Median of 5: spawning an evaluator process until it says it is ready."""
    times = []
    for _ in range(5):
        start = time.perf_counter()
        process = ChildProcess(64)
        while not process.ready:
            process.read_sync(time.monotonic() + 0.001)
        times.append((time.perf_counter() - start) * 1000)
        process.popen.kill()
        process.popen.wait()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the calls per figure: a smoke run")
    quick = parser.parse_args().quick
    calls, slow_calls = (200, 5) if quick else (2000, 50)  # slow_calls: of the steps that take milliseconds
    print(f"first evaluation in a fresh interpreter (import, process start): {cold_start_ms(1 if quick else 3):.1f} ms")
    print(f"an evaluator process, from spawn to ready: {process_start_ms():.1f} ms")
    context = per_call_us(lambda: Context(max_memory_bytes=64 << 20), slow_calls)
    print(f"a new context (lockdown + runner): {context:.0f} µs")
    evaluator = Evaluator(64)
    trivial = (wire.EVALUATE, 1.0, 1000, "1", "", "[]")
    evaluator.request_sync(*trivial)
    trip = per_call_us(lambda: evaluator.request_sync(*trivial), calls)
    print(f"pipe round trip of a trivial request: {trip:.1f} µs")
    evaluator.stop()
    with JsSandbox() as box:
        box.evaluate(EXPRESSION, SCOPE)
        small = per_call_us(lambda: box.evaluate(EXPRESSION, SCOPE), calls)
        print(f"evaluate, small expression, from a thread: {small:.1f} µs")
        called = per_call_us(lambda: box.call("(a, b) => a + b", 1, 2), calls)
        print(f"call, small function, from a thread: {called:.1f} µs")

        async def chain() -> None:
            for _ in range(calls):
                await box.aevaluate(EXPRESSION, SCOPE)

        start = time.perf_counter()
        asyncio.run(chain())
        print(f"aevaluate, one at a time on an event loop: {(time.perf_counter() - start) / calls * 1e6:.1f} µs each")

        async def many() -> None:
            await asyncio.gather(*(box.aevaluate(EXPRESSION, SCOPE) for _ in range(calls)))

        start = time.perf_counter()
        asyncio.run(many())
        print(f"aevaluate, {calls:,} at once on one loop: {(time.perf_counter() - start) / calls * 1e6:.1f} µs each")
        big = per_call_us(lambda: box.evaluate("input.rows.length", ROWS), slow_calls)
        print(f"evaluate, 150 KB scope (2,000 rows): {big:.0f} µs")
        start = time.perf_counter()
        with contextlib.suppress(JsTimeoutError):
            box.evaluate(UNINTERRUPTIBLE, {}, timeout_s=0.05)
        box.evaluate("1", {})
        print(f"a kill at a 50 ms limit, then the next evaluation: {(time.perf_counter() - start) * 1000:.0f} ms")
    start = time.perf_counter()
    check_syntax("input.some.new.expression + 12345")
    print(f"check_syntax of a new expression: {(time.perf_counter() - start) * 1e6:.0f} µs (then cached)")


if __name__ == "__main__":
    main()
