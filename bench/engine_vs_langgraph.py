"""Benchmark: Plait's engine vs LangGraph on the same workloads, in ONE process run.

Issue 3, item 7. The host drifts ~1.5x over minutes, so every trial runs every engine
back to back (the order rotates), ratios are taken per trial and then the median, and a
fixed pure-Python calibration loop is timed in each trial so runs can be compared.

Workloads
  W1  a 100-node chain of trivial nodes, µs per node (min / median of the trials).
      Plait: the graph is a YAML file run by the real engine with durable SQLite
      persistence (a file in a temp dir): `start_run(store, ref, input)` then
      `Engine(store, provider).run(run_id)`. Two meanings of "trivial node":
        LLM_CALL   answered at once by an in-process provider (render the prompt, build
                   response_format, parse + validate the answer against the edge schema,
                   claim + commit the node run with its input snapshot) - Plait's real
                   per-node orchestration path, no model time;
        TRANSFORM  `({n: current.n + 1})` evaluated in the JS sandbox (V8), validated,
                   committed.
      LangGraph: a StateGraph of 100 nodes, each a Python function returning {"n": n + 1},
      run with `graph.invoke` (its fastest path: sync functions, no event loop), with no
      checkpointer, InMemorySaver, and SqliteSaver (a file, its default settings); plus
      InMemorySaver under `ainvoke` with async nodes, the mode Plait's engine is in.
  W2  500 concurrent runs of 1 -> 8 parallel -> merge; the 9 "LLM" calls per run (the 1 and
      the 8; the merge is not a call) each `asyncio.sleep(0.05)` under a global limit of 64.
      Ideal = ceil(500 * 9 / 64) * 50 ms = 3.55 s. Plait: one Engine(llm_concurrency=64),
      500 x (start_run + Engine.run) gathered on one loop. LangGraph: an asyncio.Semaphore(64)
      around the sleep, 500 `ainvoke`s (one thread id each) gathered.
  W3  memory per in-flight run under the W2 load, each engine in a fresh subprocess:
      tracemalloc peak above the idle baseline / runs in flight (Python heap), and peak
      RSS growth / runs in flight (everything, incl. SQLite's C allocations).

    bench/.venv/bin/python bench/engine_vs_langgraph.py            # full run, ~4 min
    bench/.venv/bin/python bench/engine_vs_langgraph.py --quick    # smoke run
    .venv/bin/python bench/engine_vs_langgraph.py --plait-only     # no LangGraph needed
    bench/.venv/bin/python bench/engine_vs_langgraph.py --profile  # cProfile of W1 (Plait)

See bench/README.md for the venv with LangGraph. This script installs nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import io
import json
import math
import operator
import os
import platform
import pstats
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

import yaml

from plait.engine import eventloop
from plait.llm.provider import Provider

INSTALL_HINT = (
    "python3 -m venv bench/.venv && bench/.venv/bin/pip install -e . langgraph langgraph-checkpoint-sqlite "
    "&& bench/.venv/bin/python bench/engine_vs_langgraph.py"
)
CHAIN = 100
FAN = 8
CALL_S = 0.05
LIMIT = 64
CALLS_PER_RUN = 1 + FAN  # the root and the 8 branches call the "model"; the MERGE does not
N_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
TEXT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

# --------------------------------------------------------------------------------------
# calibration


def calibrate() -> float:
    """A fixed pure-Python loop, in ms: how fast this interpreter on this host is right now."""
    started = time.perf_counter()
    total = 0
    for i in range(300_000):
        total += (i * i) % 7
    assert total > 0
    return (time.perf_counter() - started) * 1000


# --------------------------------------------------------------------------------------
# Plait side


class InstantProvider(Provider):
    """A `plait.llm.provider.Provider` answering at once with a fixed JSON object."""

    name = "bench-instant"

    def __init__(self, content: str):
        from plait.llm.types import ChatResponse, Usage

        self._response = ChatResponse(content=content, usage=Usage(10, 3), model="bench", provider=self.name)
        self.calls = 0

    async def complete(self, request: Any) -> Any:
        self.calls += 1
        return self._response


class SleepyProvider(InstantProvider):
    """Answers after `asyncio.sleep(CALL_S)`: a model call that costs wall time, not CPU.
    The engine's `llm_concurrency` semaphore is the global limit of 64."""

    name = "bench-sleep"

    async def complete(self, request: Any) -> Any:
        self.calls += 1
        await asyncio.sleep(CALL_S)
        return self._response


def plait_chain_graph(kind: str) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    for i in range(CHAIN):
        node_id = f"n{i}"
        if kind == "llm":
            nodes.append({"id": node_id, "type": "LLM_CALL", "user_prompt_tpl": "n={{ current.n }}", "max_retries": 0})
        else:
            nodes.append({"id": node_id, "type": "TRANSFORM", "transform_expr": "({n: current.n + 1})"})
        if i:
            edges.append({"source": f"n{i - 1}", "target": node_id, "schema_id": "n"})
    edges.append({"source": f"n{CHAIN - 1}", "target": "END", "schema_id": "n"})
    return {
        "plait": 1,
        "id": f"bench_chain_{kind}",
        "input_schema": N_SCHEMA,
        "schemas": [{"id": "n", "version": "1.0.0", "schema": N_SCHEMA}],
        "nodes": nodes,
        "edges": edges,
    }


def plait_fanout_graph() -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [{"id": "root", "type": "LLM_CALL", "user_prompt_tpl": "topic: {{ input.topic }}"}]
    edges: list[dict[str, Any]] = []
    for i in range(FAN):
        nodes.append({"id": f"b{i}", "type": "LLM_CALL", "user_prompt_tpl": f"part {i} of {{{{ current.text }}}}"})
        edges.append({"source": "root", "target": f"b{i}", "schema_id": "text"})
        edges.append({"source": f"b{i}", "target": "merge", "schema_id": "text"})
    nodes.append({"id": "merge", "type": "MERGE"})
    edges.append({"source": "merge", "target": "END"})
    return {
        "plait": 1,
        "id": "bench_fanout",
        "input_schema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
        "schemas": [{"id": "text", "version": "1.0.0", "schema": TEXT_SCHEMA}],
        "nodes": nodes,
        "edges": edges,
    }


def write_graph(tmp: Path, graph: dict[str, Any]) -> str:
    path = tmp / f"{graph['id']}.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    return str(path)


class PlaitChain:
    """W1 for Plait: one store (SQLite file), one engine reused across trials, like a compiled
    LangGraph reused across invocations. The first run (warm-up) starts from the YAML file,
    which stores the graph; timed runs start from the stored graph's id."""

    def __init__(self, store: Any, tmp: Path, kind: str):
        from plait.engine.runner import Engine

        self.store = store
        self.kind = kind
        self.path = write_graph(tmp, plait_chain_graph(kind))
        self.provider = InstantProvider('{"n": 1}')
        self.engine = Engine(store, self.provider)
        self.ref = ""
        self.start_path_ms: list[float] = []

    async def warm_up(self) -> None:
        from plait.runs.start import start_run

        run_id = start_run(self.store, self.path, {"n": 0})
        self.ref = self.store.runs.get(run_id).graph_id
        await self._run(run_id)

    async def _run(self, run_id: str) -> None:
        outcome = await self.engine.run(run_id)
        if outcome.status != "completed":
            raise SystemExit(f"Plait W1 ({self.kind}) run {run_id} ended {outcome.status}: {outcome.error}")
        if self.kind == "transform" and outcome.output.get("n") != CHAIN:
            raise SystemExit(f"Plait W1 transform chain computed {outcome.output}, expected n={CHAIN}")

    async def once(self) -> tuple[float, float]:
        """(seconds for start_run + Engine.run, seconds for Engine.run alone)."""
        from plait.runs.start import start_run

        # Info only: start_run from the YAML path compiles the file every time.
        t0 = time.perf_counter()
        start_run(self.store, self.path, {"n": 0})
        self.start_path_ms.append((time.perf_counter() - t0) * 1000)

        t0 = time.perf_counter()
        run_id = start_run(self.store, self.ref, {"n": 0})
        t1 = time.perf_counter()
        await self._run(run_id)
        t2 = time.perf_counter()
        return t2 - t0, t2 - t1

    async def aclose(self) -> None:
        await self.engine.aclose()


class PlaitClientChain:
    """W1 through the Python client (`plait.AsyncClient.run`: start, drive, read the result) on
    the LLM_CALL chain, to measure the client's overhead over the engine it drives."""

    def __init__(self, db: Path, chain: PlaitChain):
        from plait.client import AsyncClient

        self.chain = chain
        self.client = AsyncClient(db, llm=InstantProvider('{"n": 1}'))

    async def warm_up(self) -> None:
        await self.client.run(self.chain.ref or self.chain.path, {"n": 0})

    async def once(self) -> tuple[float, float]:
        t0 = time.perf_counter()
        result = await self.client.run(self.chain.ref, {"n": 0})
        elapsed = time.perf_counter() - t0
        if not result.ok:
            raise SystemExit(f"Plait W1 through the client: run {result.run_id} ended {result.status}")
        return elapsed, elapsed

    async def aclose(self) -> None:
        await self.client.aclose()


class PlaitFanout:
    """W2/W3 for Plait: 500 x Engine.start (create the run + execute it) gathered on one engine."""

    def __init__(self, store: Any, tmp: Path):
        from plait.engine.runner import Engine

        self.store = store
        self.path = write_graph(tmp, plait_fanout_graph())
        self.provider = SleepyProvider('{"text": "ok"}')
        self.engine = Engine(store, self.provider, llm_concurrency=LIMIT)
        self.graph: Any = None
        self.in_flight = 0
        self.max_in_flight = 0

    async def warm_up(self) -> None:
        from plait.runs.start import resolve_graph

        self.graph = resolve_graph(self.store, str(self.path))
        await self.engine.start(self.graph, {"topic": "warm-up"})

    async def one(self, i: int) -> None:
        from plait.engine.run_input import check_input

        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            run_input = {"topic": f"t{i}"}
            check_input(self.graph, run_input)
            outcome = await self.engine.start(self.graph, run_input)
            if outcome.status != "completed" or len(outcome.output) != FAN:
                raise SystemExit(f"Plait W2 run {outcome.run_id} ended {outcome.status}: {outcome.error}")
        finally:
            self.in_flight -= 1

    async def many(self, runs: int) -> float:
        self.max_in_flight = 0
        calls_before = self.provider.calls
        started = time.perf_counter()
        await asyncio.gather(*(self.one(i) for i in range(runs)))
        elapsed = time.perf_counter() - started
        assert self.provider.calls - calls_before == runs * CALLS_PER_RUN
        return elapsed

    async def aclose(self) -> None:
        await self.engine.aclose()


def open_store(tmp: Path, name: str) -> Any:
    from plait.store import Store

    return Store(f"sqlite:///{tmp / name}")


# --------------------------------------------------------------------------------------
# LangGraph side


def langgraph_missing() -> str | None:
    try:
        import langgraph.checkpoint.sqlite
        import langgraph.graph  # noqa: F401
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def lg_config(**extra: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": CHAIN * 4, **extra}


class ChainState(TypedDict):
    n: int


class FanState(TypedDict, total=False):
    topic: str
    text: str
    parts: Annotated[list[str], operator.add]
    merged: int


def lg_chain(asynchronous: bool) -> Any:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(ChainState)
    previous = START
    for i in range(CHAIN):
        if asynchronous:

            async def step(state: ChainState) -> dict[str, int]:
                return {"n": state["n"] + 1}
        else:

            def step(state: ChainState) -> dict[str, int]:  # type: ignore[misc]
                return {"n": state["n"] + 1}

        graph.add_node(f"n{i}", step)
        graph.add_edge(previous, f"n{i}")
        previous = f"n{i}"
    graph.add_edge(previous, END)
    return graph


class LgChain:
    def __init__(self, compiled: Any, asynchronous: bool):
        self.compiled = compiled
        self.asynchronous = asynchronous

    async def warm_up(self) -> None:
        await self.once()

    async def once(self) -> tuple[float, float]:
        started = time.perf_counter()
        if self.asynchronous:
            out = await self.compiled.ainvoke({"n": 0}, lg_config())
        else:
            out = self.compiled.invoke({"n": 0}, lg_config())
        elapsed = time.perf_counter() - started
        assert out["n"] == CHAIN, out
        return elapsed, elapsed

    async def aclose(self) -> None:
        return None


class LgFanout:
    def __init__(self, checkpointer: Any):
        from langgraph.graph import END, START, StateGraph

        self.slots: asyncio.Semaphore | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls = 0

        async def model() -> str:
            assert self.slots is not None
            async with self.slots:
                self.calls += 1
                await asyncio.sleep(CALL_S)
            return "ok"

        async def root(state: FanState) -> dict[str, Any]:
            return {"text": await model()}

        def branch(i: int) -> Callable[[FanState], Awaitable[dict[str, Any]]]:
            async def run(state: FanState) -> dict[str, Any]:
                return {"parts": [f"{i}:{await model()}"]}

            return run

        async def merge(state: FanState) -> dict[str, Any]:
            return {"merged": len(state["parts"])}

        graph = StateGraph(FanState)
        graph.add_node("root", root)
        graph.add_edge(START, "root")
        for i in range(FAN):
            graph.add_node(f"b{i}", branch(i))
            graph.add_edge("root", f"b{i}")
        graph.add_node("merge", merge)
        graph.add_edge([f"b{i}" for i in range(FAN)], "merge")
        graph.add_edge("merge", END)
        self.compiled = graph.compile(checkpointer=checkpointer)

    async def warm_up(self) -> None:
        self.slots = asyncio.Semaphore(LIMIT)
        await self.one(-1)

    async def one(self, i: int) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            out = await self.compiled.ainvoke({"topic": f"t{i}", "parts": []}, lg_config())
            assert out["merged"] == FAN, out
        finally:
            self.in_flight -= 1

    async def many(self, runs: int) -> float:
        self.slots = asyncio.Semaphore(LIMIT)
        self.max_in_flight = 0
        calls_before = self.calls
        started = time.perf_counter()
        await asyncio.gather(*(self.one(i) for i in range(runs)))
        elapsed = time.perf_counter() - started
        assert self.calls - calls_before == runs * CALLS_PER_RUN
        return elapsed

    async def aclose(self) -> None:
        return None


class BareFanout:
    """The loop alone: the same 1 -> 8 calls of every run under a Semaphore(64), no engine at all.
    Its excess over the ideal is what the event loop itself costs (timer granularity, wake-ups)."""

    async def warm_up(self) -> None:
        return None

    async def many(self, runs: int) -> float:
        slots = asyncio.Semaphore(LIMIT)

        async def call() -> None:
            async with slots:
                await asyncio.sleep(CALL_S)

        async def one() -> None:
            await call()
            await asyncio.gather(*(call() for _ in range(FAN)))

        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(runs)))
        return time.perf_counter() - started


def sqlite_saver(tmp: Path, name: str, synchronous: str | None = None) -> Any:
    """SqliteSaver on a file. Its setup() only switches to WAL, so SQLite's default synchronous=FULL
    (an fsync per commit) applies; Plait's store uses WAL + synchronous=NORMAL (durable across a process
    crash, not a power cut). `synchronous="NORMAL"` gives LangGraph the same setting."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(tmp / name, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    if synchronous:
        conn.execute(f"PRAGMA synchronous={synchronous}")
    return saver


async def async_sqlite_saver(tmp: Path, name: str) -> Any:
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    saver = AsyncSqliteSaver(await aiosqlite.connect(tmp / name))
    await saver.setup()
    return saver


# --------------------------------------------------------------------------------------
# the trials


@dataclass
class Series:
    label: str
    samples: list[float] = field(default_factory=list)  # one per trial, in the row's unit
    alt: list[float] = field(default_factory=list)  # W1 Plait: Engine.run alone

    def min(self) -> float:
        return min(self.samples)

    def median(self) -> float:
        return statistics.median(self.samples)


def ratio(a: Series, b: Series) -> float:
    """Median over trials of the per-trial ratio a/b: robust to the host drifting between trials."""
    return statistics.median(x / y for x, y in zip(a.samples, b.samples, strict=True))


async def run_w1(tmp: Path, trials: int, with_lg: bool, calib: list[float]) -> dict[str, Series]:
    labels = {
        "plait_llm": "Plait LLM_CALL, SQLite",
        "plait_transform": "Plait TRANSFORM, SQLite",
        "plait_client": "Plait LLM_CALL through AsyncClient.run",
        "lg_none": "LangGraph, no checkpointer",
        "lg_memory": "LangGraph, InMemorySaver",
        "lg_sqlite": "LangGraph, SqliteSaver",
        "lg_sqlite_normal": "LangGraph, SqliteSaver, synchronous=NORMAL",
        "lg_memory_async": "LangGraph, InMemorySaver, ainvoke",
    }
    async with contextlib.AsyncExitStack() as stack:
        store = open_store(tmp, "w1_plait.db")
        stack.callback(store.close)
        subjects: dict[str, Any] = {}
        for kind in ("llm", "transform"):
            subjects[f"plait_{kind}"] = chain = PlaitChain(store, tmp, kind)
            stack.push_async_callback(chain.aclose)
        subjects["plait_client"] = client = PlaitClientChain(tmp / "w1_plait.db", subjects["plait_llm"])
        stack.push_async_callback(client.aclose)
        if with_lg:
            from langgraph.checkpoint.memory import InMemorySaver

            saver = sqlite_saver(tmp, "w1_lg.db")
            saver_normal = sqlite_saver(tmp, "w1_lg_normal.db", synchronous="NORMAL")
            stack.callback(saver.conn.close)
            stack.callback(saver_normal.conn.close)
            sync_graph = lg_chain(asynchronous=False)
            subjects["lg_none"] = LgChain(sync_graph.compile(), False)
            subjects["lg_memory"] = LgChain(sync_graph.compile(checkpointer=InMemorySaver()), False)
            subjects["lg_sqlite"] = LgChain(sync_graph.compile(checkpointer=saver), False)
            subjects["lg_sqlite_normal"] = LgChain(sync_graph.compile(checkpointer=saver_normal), False)
            async_graph = lg_chain(asynchronous=True)
            subjects["lg_memory_async"] = LgChain(async_graph.compile(checkpointer=InMemorySaver()), True)
        series = {key: Series(labels[key]) for key in subjects}
        for subject in subjects.values():
            await subject.warm_up()
        keys = list(subjects)
        for trial in range(trials):
            gc.collect()
            calib.append(calibrate())
            for key in keys[trial % len(keys) :] + keys[: trial % len(keys)]:
                total, engine_only = await subjects[key].once()
                series[key].samples.append(total / CHAIN * 1e6)
                series[key].alt.append(engine_only / CHAIN * 1e6)
            print(f"  W1 trial {trial + 1}/{trials} done", file=sys.stderr)
        starts = subjects["plait_llm"].start_path_ms + subjects["plait_transform"].start_path_ms
        series["plait_start_path"] = Series("(info) Plait start_run(YAML path), ms per run", starts)
    return series


W2_LABELS = {
    "bare": "the loop alone: Semaphore + sleep",
    "plait": "Plait, SQLite",
    "lg_none": "LangGraph, no checkpointer",
    "lg_memory": "LangGraph, InMemorySaver",
    "lg_sqlite": "LangGraph, AsyncSqliteSaver",
}


async def fanout_subject(engine: str, tmp: Path, stack: contextlib.AsyncExitStack) -> Any:
    """A W2 subject whose resources (store, engine, checkpointer connection) `stack` closes."""
    if engine == "bare":
        return BareFanout()
    if engine == "plait":
        store = open_store(tmp, "w2_plait.db")
        stack.callback(store.close)
        plait = PlaitFanout(store, tmp)
        stack.push_async_callback(plait.aclose)
        return plait
    if engine == "lg_none":
        return LgFanout(None)
    if engine == "lg_memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return LgFanout(InMemorySaver())
    saver = await async_sqlite_saver(tmp, "w2_lg.db")
    stack.push_async_callback(saver.conn.close)
    return LgFanout(saver)


LOOPS = {
    "uvloop": "on uvloop (the loop of `plait run`, `plait serve`: plait/engine/eventloop.py)",
    "asyncio": "on asyncio's own loop (asyncio.run)",
}


async def run_w2(tmp: Path, trials: int, runs: int, with_lg: bool, calib: list[float]) -> dict[str, Series]:
    """W2 on the running loop; `main` runs it once per loop of `eventloop.available()`."""
    tmp.mkdir(exist_ok=True)
    keys = ["bare", "plait"] + (["lg_none", "lg_memory", "lg_sqlite"] if with_lg else [])
    series = {key: Series(W2_LABELS[key]) for key in keys}
    async with contextlib.AsyncExitStack() as stack:
        subjects = {key: await fanout_subject(key, tmp, stack) for key in keys}
        for subject in subjects.values():
            await subject.warm_up()
        for trial in range(trials):
            for key in keys[trial % len(keys) :] + keys[: trial % len(keys)]:
                gc.collect()
                calib.append(calibrate())
                series[key].samples.append(await subjects[key].many(runs))
                print(f"  W2 trial {trial + 1}/{trials}: {key} {series[key].samples[-1]:.2f} s", file=sys.stderr)
    return series


# W3 runs each engine in a fresh subprocess, so one engine's heap and the other's imports
# never mix, and peak RSS is this engine's alone.


def _rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def w3_child(engine: str, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="plait-bench-w3-") as tmp_name:
        async with contextlib.AsyncExitStack() as stack:
            subject = await fanout_subject(engine, Path(tmp_name), stack)
            await subject.warm_up()
            await subject.many(min(runs, 20))  # pools, caches and lazy imports reach their steady size

            # RSS: sampled every 5 ms while the runs are in flight.
            gc.collect()
            base_rss = peak_rss = _rss_kib()
            done = False

            async def sample() -> None:
                nonlocal peak_rss
                while not done:
                    peak_rss = max(peak_rss, _rss_kib())
                    await asyncio.sleep(0.005)

            sampler = asyncio.create_task(sample())
            await subject.many(runs)
            done = True
            await sampler
            rss_in_flight = subject.max_in_flight

            # Python heap: tracemalloc peak above the idle baseline (slower, so no timing is kept).
            gc.collect()
            tracemalloc.start()
            base_heap = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            await subject.many(runs)
            peak_heap = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    return {
        "in_flight": rss_in_flight,
        "heap_kib_per_run": (peak_heap - base_heap) / 1024 / subject.max_in_flight,
        "rss_kib_per_run": (peak_rss - base_rss) / rss_in_flight,
    }


def run_w3(trials: int, runs: int, with_lg: bool) -> dict[str, dict[str, Series]]:
    """One fresh subprocess per engine and trial, two at a time (one per core: memory figures do not
    depend on speed, and W3 runs after the timed workloads)."""
    engines = ["plait"] + (["lg_none", "lg_memory", "lg_sqlite"] if with_lg else [])
    heap = {e: Series(W2_LABELS[e]) for e in engines}
    rss = {e: Series(W2_LABELS[e]) for e in engines}
    for trial in range(trials):
        order = engines[trial % len(engines) :] + engines[: trial % len(engines)]
        for batch in (order[i : i + 2] for i in range(0, len(order), 2)):
            procs = {
                engine: subprocess.Popen(
                    [sys.executable, __file__, "--w3-child", engine, "--w3-runs", str(runs)],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for engine in batch
            }
            for engine, proc in procs.items():
                stdout, stderr = proc.communicate()
                if proc.returncode != 0:
                    raise SystemExit(f"W3 child for {engine} failed:\n{stderr}")
                result = json.loads(stdout.strip().splitlines()[-1])
                heap[engine].samples.append(result["heap_kib_per_run"])
                rss[engine].samples.append(result["rss_kib_per_run"])
                print(
                    f"  W3 trial {trial + 1}/{trials}: {engine} {result['heap_kib_per_run']:.1f} KiB heap, "
                    f"{result['rss_kib_per_run']:.1f} KiB RSS per run ({result['in_flight']} in flight)",
                    file=sys.stderr,
                )
    return {"heap": heap, "rss": rss}


# --------------------------------------------------------------------------------------
# report


def verdict(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def print_report(
    args: argparse.Namespace,
    lg_status: str,
    w1: dict[str, Series],
    w2: dict[str, dict[str, Series]],
    w3: dict[str, dict[str, Series]],
    calib: list[float],
) -> None:
    ideal = math.ceil(args.runs * CALLS_PER_RUN / LIMIT) * CALL_S
    lg_keys: list[str] = [k for k in ("lg_none", "lg_memory", "lg_sqlite") if k in w1]
    short = {"lg_none": "LG none", "lg_memory": "LG memory", "lg_sqlite": "LG sqlite"}

    def header(title: str, extra: str = "") -> None:
        ratios = "".join(f"{'Plait/' + short[k]:>17}" for k in lg_keys)
        print(f"{title:<46}{'min':>9}{'median':>9}{extra:>10}{ratios}")

    def row(s: Series, fmt: str, pool: dict[str, Series] | None = None, extra: str = "") -> None:
        cells = "".join(f"{ratio(s, pool[k]):>17.2f}" for k in lg_keys) if pool else ""
        print(f"  {s.label:<44}{s.min():>9{fmt}}{s.median():>9{fmt}}{extra:>10}{cells}".rstrip())

    print()
    print("Plait engine vs LangGraph - bench/engine_vs_langgraph.py" + (" (--quick)" if args.quick else ""))
    print(f"host: {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}")
    print(f"LangGraph: {lg_status}")
    print(
        f"calibration loop (fixed pure-Python work), ms: min {min(calib):.1f}, median {statistics.median(calib):.1f}, "
        f"max {max(calib):.1f} over {len(calib)} trials"
    )
    print("Plait/LG: median over trials of the per-trial ratio (engines interleaved in every trial); < 1: Plait better")
    print()
    w1_pool = {k: w1[k] for k in lg_keys}
    header(f"W1 {CHAIN}-node chain, µs per node ({args.w1_trials} trials)")
    for key in ("plait_llm", "plait_transform"):
        row(w1[key], ".0f", w1_pool)
        row(Series("  Engine.run alone (without start_run)", w1[key].alt), ".0f", w1_pool)
    row(w1["plait_client"], ".0f", w1_pool)
    for key in ("lg_none", "lg_memory", "lg_sqlite", "lg_sqlite_normal", "lg_memory_async"):
        if key in w1:
            row(w1[key], ".0f")
    row(w1["plait_start_path"], ".1f")
    print()
    if w2:
        header(f"W2 {args.runs} runs of 1->{FAN}->merge, wall s ({args.w2_trials} trials)", "x ideal")
        calls = f"ceil({args.runs} runs x {CALLS_PER_RUN} calls / {LIMIT})"
        print(f"  ideal: {calls} x {CALL_S * 1000:.0f} ms = {ideal:.2f} s")
        for loop, series in w2.items():
            print(f"  -- {LOOPS[loop]}")
            for key, s in series.items():
                row(s, ".2f", series if key == "plait" else None, f"{s.median() / ideal:.3f}")
        print()
    if w3["heap"]:
        header(f"W3 KiB per in-flight run ({args.runs} in flight, {args.w3_trials} trials)")
        for kind, title in (("heap", "Python heap: tracemalloc peak"), ("rss", "RSS growth: sampled peak")):
            print(f"  {title}")
            for key, s in w3[kind].items():
                row(s, ".1f", w3[kind] if key == "plait" else None)
        print()
    print("targets:")
    if "lg_memory" in w1:
        mem = w1["lg_memory"]
        for key in ("plait_llm", "plait_transform"):
            r = ratio(w1[key], mem)
            print(
                f"  W1 {w1[key].label} <= LangGraph InMemorySaver: {w1[key].median():.0f} vs "
                f"{mem.median():.0f} µs/node (medians), ratio {r:.2f} -> {verdict(r <= 1.0)}"
            )
    else:
        print(f"  W1 Plait LLM_CALL: {w1['plait_llm'].median():.0f} µs/node (LangGraph skipped: no comparison)")
    overhead = ratio(w1["plait_client"], w1["plait_llm"])
    print(
        f"  W1 the client's overhead over the engine <= 5 %: {w1['plait_client'].median():.0f} vs "
        f"{w1['plait_llm'].median():.0f} µs/node, ratio {overhead:.3f} -> {verdict(overhead <= 1.05)}"
    )
    for loop, series in w2.items():
        w2p = series["plait"]
        print(
            f"  W2 Plait on {loop} within 5 % of the ideal {ideal:.2f} s: median {w2p.median():.2f} s = "
            f"{w2p.median() / ideal:.3f} x ideal -> {verdict(w2p.median() <= ideal * 1.05)}"
        )
    for kind in ("heap", "rss") if w3["heap"] else ():
        plait = w3[kind]["plait"]
        if not lg_keys:
            print(f"  W3 Plait ({kind}): {plait.median():.1f} KiB per run (LangGraph skipped: no comparison)")
        for key in lg_keys:
            other = w3[kind][key]
            r = ratio(plait, other)
            print(
                f"  W3 Plait <= 1/2 of {other.label} ({kind}): {plait.median():.1f} vs {other.median():.1f} "
                f"KiB/run, ratio {r:.2f} -> {verdict(r <= 0.5)}"
            )


# --------------------------------------------------------------------------------------
# profile


async def phase_breakdown(chain: PlaitChain, runs: int) -> None:
    """Where W1's time per node goes, measured without a profiler (wall time): the store's write
    transactions (the group commit: a node's result with its successor's claim, run begin and
    end), the node's executor, and the rest (scheduler, event loop). Wraps the store's writer on
    this instance and the engine's executor table, then restores them."""
    from plait.engine import scheduler
    from plait.runs.start import start_run

    store_key, executor_key = "store writes (begin; per node: result + next claim)", "executor (render/eval, validate)"
    spent = {store_key: 0.0, executor_key: 0.0}

    def timed(owner: Any, name: str, key: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - started

        setattr(owner, name, wrapper)

    def timed_executor(original: Any) -> Any:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                spent[executor_key] += time.perf_counter() - started

        return wrapper

    table = scheduler.EXECUTORS
    saved = dict(table)
    wrapped = [(chain.store.runs.nodes, "write"), (chain.store.runs, "begin")]
    for owner, name in wrapped:
        timed(owner, name, store_key)
    table.update({kind: timed_executor(fn) for kind, fn in saved.items()})
    try:
        run_ids = [start_run(chain.store, chain.ref, {"n": 0}) for _ in range(runs)]
        started = time.perf_counter()
        for run_id in run_ids:
            await chain._run(run_id)
        total = time.perf_counter() - started
    finally:
        table.update(saved)
        for owner, name in wrapped:
            delattr(owner, name)
    nodes = runs * CHAIN
    print(f"phases of Engine.run, {runs} runs x {CHAIN} {chain.kind} nodes, no profiler: "
          f"{total / nodes * 1e6:.0f} µs/node")  # fmt: skip
    for key, value in spent.items():
        print(f"  {value / nodes * 1e6:7.0f} µs/node  {key}")
    print(f"  {(total - sum(spent.values())) / nodes * 1e6:7.0f} µs/node  rest: scheduler, run start/end, event loop\n")


async def profile_plait(what: str, runs: int) -> None:
    """cProfile of Plait alone: W1 (`llm`/`transform`: Engine.run of `runs` chains, run rows created
    beforehand) or `w2` (start_run + Engine.run of `runs` fan-out runs gathered)."""
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory(prefix="plait-bench-prof-") as tmp_name:
        tmp = Path(tmp_name)
        store = open_store(tmp, "prof.db")
        if what == "w2":
            fanout = PlaitFanout(store, tmp)
            await fanout.warm_up()
            nodes = runs * (CALLS_PER_RUN + 1)
            started = time.perf_counter()
            profiler.enable()
            await fanout.many(runs)
            profiler.disable()
            elapsed = time.perf_counter() - started
            await fanout.aclose()
            title = f"{runs} concurrent fan-out runs (start_run + Engine.run), {nodes} nodes: {elapsed:.2f} s wall"
        else:
            from plait.runs.start import start_run

            chain = PlaitChain(store, tmp, what)
            await chain.warm_up()
            await phase_breakdown(chain, runs)
            run_ids = [start_run(store, chain.ref, {"n": 0}) for _ in range(runs)]
            nodes = runs * CHAIN
            started = time.perf_counter()
            profiler.enable()
            for run_id in run_ids:
                await chain._run(run_id)
            profiler.disable()
            elapsed = time.perf_counter() - started
            await chain.aclose()
            title = f"Engine.run, {runs} runs x {CHAIN} {what} nodes"
        store.close()
    print(f"cProfile of {title}: {elapsed / nodes * 1e6:.0f} µs/node under the profiler")
    stats = pstats.Stats(profiler)
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    groups: dict[str, float] = {}
    for (filename, _line, _name), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        groups[_group(filename)] = groups.get(_group(filename), 0.0) + tottime
    print("\nself time by area (% of profiled time):")
    for name, tottime in sorted(groups.items(), key=lambda kv: -kv[1])[:18]:
        print(f"  {100 * tottime / total:5.1f} %  {tottime / nodes * 1e6:7.1f} µs/node  {name}")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
    print("\ncumulative (top 45):")
    print(out.getvalue().split("\n", 6)[-1][:12000])
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
    print("\nself time (top 30):")
    print(out.getvalue().split("\n", 6)[-1][:9000])


def _group(filename: str) -> str:
    if filename.startswith(("~", "<")):
        return "builtins / C calls (sqlite3, json, ...)"
    parts = Path(filename).parts
    if "plait" in parts:
        idx = len(parts) - 1 - parts[::-1].index("plait")
        return "/".join(parts[idx:])
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1]
    return "stdlib: " + Path(filename).name


# --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: few trials, 100 runs in W2/W3")
    parser.add_argument("--plait-only", action="store_true", help="skip LangGraph even when it is installed")
    parser.add_argument(
        "--profile",
        choices=["llm", "transform", "w2"],
        nargs="?",
        const="llm",
        help="print a cProfile of Plait alone instead of the benchmark: W1 with LLM_CALL (default) "
        "or TRANSFORM nodes, or W2",
    )
    parser.add_argument("--w1-trials", type=int, default=None)
    parser.add_argument("--w2-trials", type=int, default=None)
    parser.add_argument("--w3-trials", type=int, default=None)
    parser.add_argument("--runs", type=int, default=None, help="concurrent runs in W2/W3 (default 500)")
    parser.add_argument("--w3-child", help=argparse.SUPPRESS)
    parser.add_argument("--w3-runs", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.w3_child:
        print(json.dumps(asyncio.run(w3_child(args.w3_child, args.w3_runs))))
        return
    if args.profile:
        asyncio.run(profile_plait(args.profile, args.runs or (100 if args.profile == "w2" else 20)))
        return
    # 0 trials skips a workload (W1 always runs: at least one trial)
    args.w1_trials = args.w1_trials or (2 if args.quick else 9)
    args.w2_trials = (1 if args.quick else 3) if args.w2_trials is None else args.w2_trials
    args.w3_trials = 1 if args.w3_trials is None else args.w3_trials  # memory figures repeat to within 1 %
    args.runs = args.runs or (100 if args.quick else 500)

    missing = None if args.plait_only else langgraph_missing()
    with_lg = not args.plait_only and missing is None
    if args.plait_only:
        lg_status = "skipped (--plait-only)"
    elif missing:
        lg_status = f"skipped, not importable ({missing}); install it in a separate venv: {INSTALL_HINT}"
    else:
        from importlib.metadata import version

        lg_status = (
            f"langgraph {version('langgraph')}, langgraph-checkpoint-sqlite "
            f"{version('langgraph-checkpoint-sqlite')}, langgraph-checkpoint {version('langgraph-checkpoint')}"
        )
    print(f"LangGraph: {lg_status}", file=sys.stderr)

    calib: list[float] = []
    with tempfile.TemporaryDirectory(prefix="plait-bench-") as tmp_name:
        tmp = Path(tmp_name)
        w1 = asyncio.run(run_w1(tmp, args.w1_trials, with_lg, calib))
        w2 = {
            loop: eventloop.run(run_w2(tmp / loop, args.w2_trials, args.runs, with_lg, calib), loop)
            for loop in (eventloop.available() if args.w2_trials else ())
        }
    w3 = run_w3(args.w3_trials, args.runs, with_lg) if args.w3_trials else {"heap": {}, "rss": {}}
    print_report(args, lg_status, w1, w2, w3, calib)


if __name__ == "__main__":
    main()
