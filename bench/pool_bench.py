"""Benchmark: the provider pool (providers issue). Plait only; reuses W2 of engine_vs_langgraph.py.

P1  W2 through the pool: 500 runs of 1 -> 8 -> merge, every call routed by the pool to a
    provider whose `max_concurrency = 64` is the only limit (no engine-level limit), each call a
    50 ms sleep (a scripted provider with `delay_ms: 50`). Target: within 5 % of the ideal
    ceil(calls / 64) x 50 ms, like W2 itself.
P2  Failover cost: one request whose first target fails once (HTTP 500 from a scripted fault)
    before a retry or a failover, against the same request with no fault. Target: the fault
    adds no more than one backoff interval (`backoff_s`, jitter included) over the failed
    call's own time.

    .venv/bin/python bench/pool_bench.py [--runs 500] [--trials 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import engine_vs_langgraph as w2

from plait.engine import eventloop

BACKOFF_S = 0.2


def pool_toml(tmp: Path, limit: int) -> Path:
    (tmp / "sleepy.yaml").write_text(f'responses:\n  - {{output: {{text: "ok"}}, delay_ms: {int(w2.CALL_S * 1000)}}}\n')
    path = tmp / "plait.toml"
    path.write_text(
        f'[[providers]]\nid = "sleepy"\nkind = "scripted"\nfile = "sleepy.yaml"\nmax_concurrency = {limit}\n'
        f'models = [{{ name = "m" }}]\n\n[roles]\nchat = "sleepy/m"\n'
    )
    return path


async def p1(runs: int) -> float:
    from plait.config import load_config
    from plait.engine.runner import Engine
    from plait.llm.pool import ProviderPool
    from plait.runs.start import resolve_graph
    from plait.store import Store

    with tempfile.TemporaryDirectory(prefix="plait-bench-pool-") as tmp_name:
        tmp = Path(tmp_name)
        store = Store(f"sqlite:///{tmp / 'pool.db'}")
        engine = Engine(store, ProviderPool(load_config(str(pool_toml(tmp, w2.LIMIT)))), cache=False)
        graph = resolve_graph(store, str(w2.write_graph(tmp, w2.plait_fanout_graph())))
        await engine.start(graph, {"topic": "warm-up"})

        async def one(i: int) -> None:
            outcome = await engine.start(graph, {"topic": f"t{i}"})
            if outcome.status != "completed":
                raise SystemExit(f"run ended {outcome.status}: {outcome.error}")

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(runs)))
        elapsed = time.perf_counter() - started
        await engine.aclose()
        store.close()
    return elapsed


async def p2(trials: int) -> dict[str, list[float]]:
    """Request latency, fresh pool each time: no fault; one fault then a retry on the same target
    (retries = 1); a fault then a failover to the second target (retries = 0)."""
    from plait.config import load_config
    from plait.llm.pool import ProviderPool
    from plait.llm.types import ChatRequest

    request = ChatRequest(node_id="n", messages=[{"role": "user", "content": "go"}])
    ok = '{output: {text: "ok"}, delay_ms: 20}'
    cases = {
        "clean": (0, f"responses:\n  - {ok}\n"),
        "retry": (1, f"responses:\n  - {{error: 500, delay_ms: 20, times: 1}}\n  - {ok}\n"),
        "failover": (0, "responses:\n  - {error: 500, delay_ms: 20}\n"),
    }
    samples: dict[str, list[float]] = {name: [] for name in cases}
    with tempfile.TemporaryDirectory(prefix="plait-bench-failover-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "ok.yaml").write_text(f"responses:\n  - {ok}\n")
        for name, (retries, first) in cases.items():
            (tmp / "first.yaml").write_text(first)
            (tmp / "plait.toml").write_text(
                f'[[providers]]\nid = "a"\nkind = "scripted"\nfile = "first.yaml"\nretries = {retries}\n'
                f'backoff_s = {BACKOFF_S}\nmodels = [{{ name = "m" }}]\n'
                '[[providers]]\nid = "b"\nkind = "scripted"\nfile = "ok.yaml"\nmodels = [{ name = "m" }]\n'
                '[roles]\nchat = ["a/m", "b/m"]\n'
            )
            for _ in range(trials):
                pool = ProviderPool(load_config(str(tmp / "plait.toml")))
                started = time.perf_counter()
                await pool.complete(request)
                samples[name].append(time.perf_counter() - started)
                await pool.aclose()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    calls = args.runs * w2.CALLS_PER_RUN
    ideal = -(-calls // w2.LIMIT) * w2.CALL_S
    print(f"P1 W2 through the pool ({args.runs} runs, {calls} calls, max_concurrency {w2.LIMIT} on the provider)")
    loops = eventloop.available()
    walls: dict[str, list[float]] = {loop: [] for loop in loops}
    for trial in range(args.trials):  # the loops interleaved, as the engines are in engine_vs_langgraph.py
        for loop in loops[trial % len(loops) :] + loops[: trial % len(loops)]:
            walls[loop].append(eventloop.run(p1(args.runs), loop))
    for loop in loops:
        median = statistics.median(walls[loop])
        verdict = "MET" if median <= ideal * 1.05 else "MISSED"
        print(
            f"  {w2.LOOPS[loop]}\n    wall s: min {min(walls[loop]):.2f}, median {median:.2f}; ideal {ideal:.2f} s "
            f"-> {median / ideal:.3f} x ideal; target: within 5 % of the ideal -> {verdict}"
        )
    samples = asyncio.run(p2(max(5, args.trials * 5)))
    clean = statistics.median(samples["clean"])
    print(f"P2 one fault (the failing call itself takes 20 ms; backoff_s = {BACKOFF_S})")
    print(f"  clean request: {1000 * clean:.1f} ms")
    for name in ("retry", "failover"):
        extra = statistics.median(samples[name]) - clean - 0.020
        verdict = "MET" if extra <= BACKOFF_S else "MISSED"
        print(f"  {name}: +{1000 * extra:.1f} ms beyond the failed call; at most one backoff interval -> {verdict}")


if __name__ == "__main__":
    main()
