"""Benchmark: what streaming a node's answer costs, in one process run.

    .venv/bin/python bench/streaming.py            # ~30 s
    .venv/bin/python bench/streaming.py --quick    # smoke run
    .venv/bin/python bench/streaming.py --worker   # also through a `plait worker` (Redis)

A provider in this process writes its answer piece by piece at a set pace (no model time
besides the pace), through the real engine, run session and durable SQLite store:

  first   the time the engine adds before the first `NodeDelta` reaches a listener on the
          engine's bus: from the provider passing its first piece on, over 30 runs (median, max).
  rate    deltas per second of one stream after coalescing: 1,000 pieces at 500 a second.
  parse   the CPU of the partial JSON parse (`NodePartial`) on a 40 KB object answer written in
          10,000 pieces at 2,000 a second (a fast model), as a share of the node's time.
  memory  Python heap per in-flight run with 200 runs streaming at once (tracemalloc's peak
          above the idle baseline, as W3), against the same 200 runs unstreamed, in one process.
  worker  with --worker: from a `plait worker`'s first delta of a run (the event's time) to its
          arrival in this process through Redis, as a server's stream receives it.

docs/performance.md ("Streaming") keeps the figures. Numbers are of this machine at the time:
run it again rather than trust them elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from plait.engine import streaming
from plait.engine.events import Event, NodeDelta
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, Usage
from plait.runs.session import RunSession
from plait.runs.start import start_run
from plait.store import Store

TEXT_GRAPH = """
plait: 1
id: streamed_text
nodes:
  - {id: write, type: LLM_CALL, user_prompt_tpl: "Write.", cache: false}
edges: []
"""
OBJECT_GRAPH = """
plait: 1
id: streamed_object
schemas:
  - id: doc
    version: 1.0.0
    schema: {type: object, properties: {text: {type: string}}, required: [text]}
nodes:
  - {id: write, type: LLM_CALL, user_prompt_tpl: "Write.", cache: false}
  - {id: keep, type: TRANSFORM, transform_expr: "nodes.write"}
edges:
  - {source: write, target: keep, schema_id: doc}
  - {source: keep, target: END}
"""


class Paced(Provider):
    """Writes `pieces` at `per_second` (a sleep shorter than a millisecond is not kept: above
    1,000 a second, several pieces go between two 1 ms sleeps); notes when the first went."""

    name = "paced"

    def __init__(self, pieces: list[str], per_second: float) -> None:
        self.pieces = pieces
        self.every = max(1, round(per_second / 1000))
        self.pause_s = self.every / per_second
        self.first_at: list[float] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        for index, piece in enumerate(self.pieces):
            if request.on_delta is not None:
                if index == 0:
                    self.first_at.append(time.perf_counter())
                request.on_delta(piece)
            if index % self.every == self.every - 1:
                await asyncio.sleep(self.pause_s)
        content = "".join(self.pieces)
        return ChatResponse(content, usage=Usage(10, len(self.pieces)), model="paced", provider="paced")


async def _session(folder: Path, name: str, provider: Provider, graph: str) -> tuple[RunSession, str]:
    path = folder / f"{name}.yaml"
    path.write_text(graph)
    store = Store(f"sqlite:///{folder / name}.db")
    return RunSession(store, provider, cache=False), str(path)


def _start(session: RunSession, graph: str, stream: bool) -> str:
    run_id = start_run(session.store, graph, {}, check=session.check_executable)
    if stream:
        session.stream(run_id, True)
    return run_id


async def first_delta(folder: Path, runs: int) -> tuple[float, float]:
    """(median, max) ms from the provider's first piece to a listener's first delta."""
    provider = Paced([f"word{i} " for i in range(20)], 200)
    session, graph = await _session(folder, "first", provider, TEXT_GRAPH)
    heard: list[float] = []

    def listen(event: Event) -> None:
        if isinstance(event, NodeDelta) and len(heard) < len(provider.first_at):
            heard.append(time.perf_counter())

    session.events.subscribe(listen)
    for _ in range(runs):
        await session.drive(_start(session, graph, True))
    await session.aclose()
    added = [(h - f) * 1000 for h, f in zip(heard, provider.first_at, strict=True)]
    return statistics.median(added), max(added)


async def rate(folder: Path, pieces: int, per_second: int) -> tuple[int, float]:
    """(deltas, deltas per second) of one stream of `pieces` written at `per_second`."""
    provider = Paced([f"w{i} " for i in range(pieces)], per_second)
    session, graph = await _session(folder, "rate", provider, TEXT_GRAPH)
    times: list[float] = []
    session.events.subscribe(lambda e: times.append(time.perf_counter()) if isinstance(e, NodeDelta) else None)
    await session.drive(_start(session, graph, True))
    await session.aclose()
    return len(times), (len(times) - 1) / (times[-1] - times[0])


async def parse_share(folder: Path, size: int, pieces: int, per_second: int) -> tuple[float, float, int]:
    """(parse ms, node ms, partials) for an object answer of `size` bytes in `pieces` pieces."""
    body = json.dumps({"text": "lorem ipsum " * (size // 12)})
    step = max(1, len(body) // pieces)
    provider = Paced([body[i : i + step] for i in range(0, len(body), step)], per_second)
    session, graph = await _session(folder, "parse", provider, OBJECT_GRAPH)
    spent: list[float] = []
    original = streaming.NodeStream._emit_partial

    def timed(self: streaming.NodeStream) -> None:
        started = time.perf_counter()
        original(self)
        spent.append(time.perf_counter() - started)

    streaming.NodeStream._emit_partial = timed  # type: ignore[method-assign]
    try:
        run_id = _start(session, graph, True)
        began = time.perf_counter()
        await session.drive(run_id)
        node_s = time.perf_counter() - began
    finally:
        streaming.NodeStream._emit_partial = original  # type: ignore[method-assign]
    await session.aclose()
    return sum(spent) * 1000, node_s * 1000, len(spent)


async def memory(folder: Path, runs: int, stream: bool) -> float:
    """Heap KiB per in-flight run: `runs` runs writing 50 pieces each at 50 a second, all at once."""
    provider = Paced([f"word{i} " for i in range(50)], 50)
    session, graph = await _session(folder, f"memory_{stream}", provider, TEXT_GRAPH)
    await session.drive(_start(session, graph, stream))  # warm: compiled graph, sandbox, store
    run_ids = [_start(session, graph, stream) for _ in range(runs)]
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    await asyncio.gather(*(session.drive(run_id) for run_id in run_ids))  # 50 pieces take a second: all overlap
    held = tracemalloc.get_traced_memory()[1] - base  # the peak, as W3 measures
    tracemalloc.stop()
    await session.aclose()
    return held / runs / 1024


def through_worker(folder: Path, runs: int) -> tuple[float, float]:
    """(median, max) ms from a worker's first delta of a run (the event's `at`) to its arrival
    in this process through Redis, for `runs` runs streamed on a `plait worker` (SQLite shared)."""
    import os
    import subprocess
    import sys
    import threading
    import uuid

    from plait.worker.app import WorkerSettings, make_app
    from plait.worker.events import EventFollower, ask_to_stream, signing_key
    from plait.worker.relay import Relay

    queue = f"bench-{uuid.uuid4().hex[:8]}"
    (folder / "model.yaml").write_text(json.dumps({"responses": [{"text": " ".join(["word"] * 20), "delay_ms": 200}]}))
    (folder / "plait.toml").write_text(
        '[[providers]]\nid = "fake"\nkind = "scripted"\nfile = "model.yaml"\n[roles]\nchat = "fake/scripted"\n'
        f'[workers]\nbroker = "redis://127.0.0.1:6379/0"\nqueue = "{queue}"\n'
    )
    (folder / "graph.yaml").write_text(TEXT_GRAPH)
    db = f"sqlite:///{folder / 'workers.db'}"
    settings = WorkerSettings(broker="redis://127.0.0.1:6379/0", queue=queue)
    store = Store(db)
    key = signing_key(store)
    arrived: dict[str, float] = {}
    done = threading.Event()

    def heard(event: Any) -> None:
        if event.kind == "node:delta" and event.run_id not in arrived:
            arrived[event.run_id] = (time.time() - event.at) * 1000
            if len(arrived) >= runs:
                done.set()

    follower = EventFollower(settings.broker, queue, heard, key)
    follower.wait_ready()
    env = {**os.environ, "PLAIT_DB": db, "PLAIT_CONFIG": str(folder / "plait.toml")}
    worker = subprocess.Popen([sys.executable, "-m", "plait", "worker", "-c", "4"], cwd=folder, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    relay = Relay(store, make_app(settings), settings)

    def streamed_run() -> None:
        run_id = str(uuid.uuid4())
        ask_to_stream(settings.broker, queue, run_id, True, key)
        start_run(store, str(folder / "graph.yaml"), {}, announce="start", run_id=run_id)
        relay.flush()
        time.sleep(0.3)  # one at a time: the latency of a quiet deployment, not of a queue

    try:
        for _ in range(100):  # until the worker is up and listening to its control channel
            streamed_run()
            if arrived:
                break
        arrived.clear()
        for _ in range(runs):
            streamed_run()
        if not done.wait(120):
            raise SystemExit(f"only {len(arrived)} of {runs} runs streamed through the worker")
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        follower.close()
        store.close()
    return statistics.median(arrived.values()), max(arrived.values())


async def main(quick: bool, worker: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        median, worst = await first_delta(folder, 5 if quick else 30)
        print(f"first   added time to the first delta: median {median:.2f} ms, max {worst:.2f} ms")
        count, per_s = await rate(folder, 200 if quick else 1000, 500)
        print(f"rate    1 stream, {200 if quick else 1000} pieces at 500/s: {count} deltas, {per_s:.1f} per second")
        parse_ms, node_ms, partials = await parse_share(folder, 40_000, 10_000, 2000 if not quick else 20_000)
        print(f"parse   40 KB object answer: {partials} partial parses, {parse_ms:.1f} ms of {node_ms:.0f} ms "
              f"({100 * parse_ms / node_ms:.2f} % of the node's time)")  # fmt: skip
        runs = 50 if quick else 200
        streamed = await memory(folder, runs, True)
        plain = await memory(folder, runs, False)
        print(f"memory  {runs} runs in flight: {streamed:.1f} KiB/run streaming, {plain:.1f} KiB/run not "
              f"(x{streamed / plain:.2f})")  # fmt: skip
        if worker:
            median, worst = await asyncio.to_thread(through_worker, folder, 5 if quick else 20)
            print(f"worker  a worker's first delta to this process through Redis: median {median:.1f} ms, "
                  f"max {worst:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, a faster parse workload (a smoke run)")
    parser.add_argument("--worker", action="store_true", help="also through a `plait worker` (needs Redis)")
    args = parser.parse_args()
    asyncio.run(main(args.quick, args.worker))
