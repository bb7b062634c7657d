"""What the JavaScript sandbox costs, step by step (QuickJS, `plait/sandbox/`).

    .venv/bin/python bench/sandbox.py

Prints, in µs unless marked: loading QuickJS and the first context (in a fresh interpreter),
a new context (lockdown and runner), one evaluation of a small expression on the calling thread
(the quick path every expression tries first), the same through a slot (the thread an
expression goes to when it needs more than 5 ms), a 150 KB scope, and a first syntax check.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from plait.sandbox import JsSandbox, check_syntax
from plait.sandbox._context import Context

SCOPE = {"input": {"text": "a b c"}, "nodes": {"classify": {"label": "bug", "score": 3}}}
EXPRESSION = "({label: nodes.classify.label, next: nodes.classify.score + 1})"
ROWS = {"input": {"rows": [{"id": i, "text": "z" * 60} for i in range(2_000)]}}  # ~150 KB of JSON


def per_call_us(action: Callable[[], object], calls: int) -> float:
    """Median over 5 loops of the µs one call takes."""
    loops = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            action()
        loops.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(loops)


def cold_start_ms() -> float:
    code = (
        "import time; t = time.perf_counter(); from plait.sandbox import JsSandbox\n"
        "with JsSandbox() as box: box.evaluate('1', {})\n"
        "print((time.perf_counter() - t) * 1000)"
    )
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
            for _ in range(3)]  # fmt: skip
    return statistics.median(runs)


def main() -> None:
    print(f"import + first context + first evaluation, fresh interpreter: {cold_start_ms():.1f} ms")
    print(f"a new context (lockdown + runner): {per_call_us(lambda: Context(max_memory_bytes=64 << 20), 50):.0f} µs")
    with JsSandbox() as box:
        box.evaluate(EXPRESSION, SCOPE)
        small = per_call_us(lambda: box.evaluate(EXPRESSION, SCOPE), 2000)
        print(f"evaluate, small expression, calling thread: {small:.1f} µs")
        called = per_call_us(lambda: box.call("(a, b) => a + b", 1, 2), 2000)
        print(f"call, small function, calling thread: {called:.1f} µs")

        async def many() -> None:
            await asyncio.gather(*(box.aevaluate(EXPRESSION, SCOPE) for _ in range(2000)))

        start = time.perf_counter()
        asyncio.run(many())
        print(f"aevaluate, 2,000 at once on one loop: {(time.perf_counter() - start) / 2000 * 1e6:.1f} µs each")
        slot = box._pool.request(None)
        assert slot.item is not None
        names, payload = list(SCOPE), __import__("json").dumps(list(SCOPE.values()))

        def through_slot() -> None:
            slot.item.submit("evaluate", EXPRESSION, names, payload, 1_000_000, 1.0).result()  # type: ignore[union-attr]

        print(f"evaluate in a slot (two thread switches): {per_call_us(through_slot, 2000):.1f} µs")
        box._pool.release(slot.item, None)
        big = per_call_us(lambda: box.evaluate("input.rows.length", ROWS), 50)
        print(f"evaluate, 150 KB scope (2,000 rows): {big:.0f} µs")
    start = time.perf_counter()
    check_syntax("input.some.new.expression + 12345")
    print(f"check_syntax of a new expression: {(time.perf_counter() - start) * 1e6:.0f} µs (then cached)")


if __name__ == "__main__":
    main()
