"""What a MAP item costs next to a plain node, and what a long MAP holds in memory.

    .venv/bin/python bench/map_overhead.py [--items 1000] [--db sqlite|URL] [--trials 3]

In one process, on one store: a chain of N TRANSFORM nodes (the plain node's cost: claim,
execute, commit), and a MAP over N items whose body is one such TRANSFORM (each item a child
run: its row, its node run, its end). Prints the ms per plain node and per MAP item and their
ratio, then the peak of Python's allocations (tracemalloc) during MAPs of N/5 and N items,
per item: a MAP's memory grows with the outputs it gathers, not with a run state per item.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import yaml

from plait.engine.runner import Engine
from plait.runs.start import start_run
from plait.store import Store

STEP = "({n: current.n + 1})"


def chain(count: int) -> dict[str, Any]:
    nodes = [{"id": f"t{i}", "type": "TRANSFORM", "transform_expr": STEP} for i in range(count)]
    edges = [{"source": f"t{i}", "target": f"t{i + 1}"} for i in range(count - 1)]
    return {"plait": 1, "id": f"chain{count}", "nodes": nodes, "edges": edges}


def fan_out(count: int, concurrency: int) -> dict[str, Any]:
    body = {"nodes": [{"id": "t", "type": "TRANSFORM", "transform_expr": "({n: input.n + 1})"}], "edges": []}
    node = {"id": "m", "type": "MAP", "items": "input.values", "max_concurrency": concurrency, "body": body}
    return {"plait": 1, "id": f"map{count}", "nodes": [node], "edges": []}


def timed(store: Store, graph: dict[str, Any], run_input: dict[str, Any], folder: Path) -> float:
    path = folder / f"{graph['id']}.yaml"
    path.write_text(yaml.safe_dump(graph))
    run_id = start_run(store, str(path), run_input)

    async def go() -> float:
        engine = Engine(store)
        try:
            began = time.perf_counter()
            outcome = await engine.run(run_id)
            assert str(outcome.status) == "completed", outcome
            return time.perf_counter() - began
        finally:
            await engine.aclose()

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--db", default="sqlite", help="sqlite (a new file), or a database URL")
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    n = args.items
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url = f"sqlite:///{folder / 'bench.db'}" if args.db == "sqlite" else args.db
        with Store(url) as store:
            timed(store, chain(20), {"n": 0}, folder)  # warm: QuickJS, statements, the plan cache
            timed(store, fan_out(20, args.concurrency), {"values": [{"n": i} for i in range(20)]}, folder)
            plains, items = [], []
            for _ in range(args.trials):  # alternated, so that both see the same machine
                plains.append(timed(store, chain(n), {"n": 0}, folder) / n * 1000)
                values = {"values": [{"n": i} for i in range(n)]}
                items.append(timed(store, fan_out(n, args.concurrency), values, folder) / n * 1000)
            plain, per_item = statistics.median(plains), statistics.median(items)
            print(f"plain TRANSFORM node in a chain of {n}: {plain:.2f} ms (median of {args.trials})")
            print(f"MAP item ({n} items, {args.concurrency} at once, one TRANSFORM each): {per_item:.2f} ms")
            print(f"ratio MAP item / plain node: {per_item / plain:.2f}x")
            for count in (n // 5, n):
                tracemalloc.start()
                timed(store, fan_out(count, args.concurrency), {"values": [{"n": i} for i in range(count)]}, folder)
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                print(f"peak allocations, MAP of {count}: {peak / 1e6:.1f} MB ({peak / count / 1e3:.1f} KB per item)")


if __name__ == "__main__":
    main()
