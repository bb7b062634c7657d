"""Resource decisions before each node: the CPU rule holds nodes that call no model (for its
5-15 s window), providers exhausted pause the run (resumable, decided again on resume),
priority 8 passes memory and 7 the capacity rule, `max_concurrent_nodes` bounds a run's nodes
in flight, the network probe tells a reachable provider from an unreachable one; each decision
recorded on its node run with its probe. Probes and the clock are injected: nothing here
loads the machine or waits for a window in real time."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from plait.config import PlaitConfig, ResourcesConfig
from plait.engine.events import NodeCompleted, NodeStarted
from plait.engine.resources import Probe, ResourceGate, Subject, decide, provider_states, reachable
from plait.engine.runner import Engine
from plait.llm.pool import ProviderPool
from plait.model.enums import NodeStatus, RunStatus
from plait.runs.start import start_run
from plait.store import Store
from tests.engine.test_engine import counting, graph_file, llm, nodes_of, script

CALM = Probe(cpu_percent=10, memory_percent=40, disk_free_gb=50, capacity_percent=100, at=0)


def seen(**changed: Any) -> Probe:
    return Probe(**{**CALM.as_json(), **changed})


class Clock:
    """A clock that moves when the gate sleeps (windows of seconds pass at once), and a
    millisecond each time it is read (a probe is never kept for ever)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)


def gate(
    store: Store, probe: Callable[[Clock], Probe], clock: Clock | None = None, working: int = 0, **config: Any
) -> ResourceGate:
    """A gate seeing `probe(clock)`; `working`: other model-free nodes taken as executing."""
    clock = clock or Clock()
    made = ResourceGate(ResourcesConfig(**{"probe_s": 1, **config}), store, None, lambda: 0,
                        probe=lambda: probe(clock), clock=clock, sleep=clock.sleep)  # fmt: skip
    made.working = working
    return made


def drive(engine: Engine, run_id: str) -> Any:
    async def go() -> Any:
        try:
            return await asyncio.wait_for(engine.run(run_id), 60)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def decided(store: Store, run_id: str) -> list[tuple[str, str, str | None]]:
    return [(d.action, d.rule, d.node_id) for d in store.decisions.of_run(run_id)]


WORK = {"id": "t", "type": "CODE", "code": "return {text: 'done'};"}
CHAIN = [{"source": "t", "target": "a"}, {"source": "a", "target": "END", "schema_id": "text"}]
"""The CODE node, then an LLM_CALL `a`."""


# -- the verdict, pure ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("probe_seen", "subject", "expected"),
    [
        (seen(cpu_percent=95), Subject("work", busy=1), ("queue", "cpu")),
        (seen(cpu_percent=95), Subject("model", busy=1), None),  # its call waits on the pool anyway
        (seen(cpu_percent=95), Subject("work", busy=0), None),  # nothing of this engine's to hold back
        (seen(cpu_percent=95), Subject("work", priority=8, busy=1), None),
        (seen(cpu_percent=95), Subject("work", bounded=True, busy=1), None),  # a batch, a worker, a MAP's item
        (seen(cpu_percent=95), Subject("light", busy=1), None),  # a MERGE: too little to hold back
        (seen(memory_percent=90), Subject("light"), ("queue", "memory")),
        (seen(memory_percent=90), Subject("model", priority=8), None),
        (seen(memory_percent=90), Subject("work", priority=7), ("queue", "memory")),
        (seen(capacity_percent=5), Subject("model", priority=7), None),
        (seen(capacity_percent=5), Subject("model", priority=6), ("queue", "capacity")),
        (seen(capacity_percent=5), Subject("model", priority=6, bounded=True), None),
        (seen(capacity_percent=5), Subject("work", priority=1), None),  # no provider in it
        (seen(providers={"a": "unreachable", "b": "unusable"}), Subject("model", priority=10), ("pause", "providers")),
        (seen(providers={"a": "unreachable", "b": "rpm"}), Subject("model"), None),  # the pool waits out the minute
        (seen(providers={"a": "tpm"}), Subject("model"), None),
        (seen(providers={"a": "unreachable", "b": "ok"}), Subject("model"), None),
        (seen(providers={"a": "unreachable"}), Subject("work"), None),
        (seen(disk_free_gb=0.1), Subject("model", priority=10), ("reject", "disk")),
    ],
)
def test_the_verdict_on_a_node(probe_seen: Probe, subject: Subject, expected: Any) -> None:
    found = decide(ResourcesConfig(), probe_seen, subject)
    assert (None if found is None else (found.action, found.rule)) == expected


def test_the_window_and_the_new_keys_have_their_defaults_and_checks() -> None:
    c = ResourcesConfig()
    assert (c.cpu_queue_min_s, c.cpu_queue_max_s, c.max_concurrent_nodes, c.on_exhausted) == (5, 15, 3, "pause")
    with pytest.raises(ValueError, match="cpu_queue_min_s"):
        ResourcesConfig(cpu_queue_min_s=20, cpu_queue_max_s=10)
    earlier = ResourcesConfig.model_validate({"cpu_queue_s": 2})  # a file of an earlier release still loads
    assert (earlier.cpu_queue_min_s, earlier.cpu_queue_max_s) == (2, 2)


# -- the CPU rule ---------------------------------------------------------------------------------------------


def cpu_graph(tmp_path: Path) -> str:
    """A CODE node and an LLM_CALL side by side."""
    edges = [{"source": "t", "target": "END"}, {"source": "a", "target": "END", "schema_id": "text"}]
    return graph_file(tmp_path, [WORK, llm("a")], edges)


@pytest.mark.parametrize(
    ("calm_at", "waited"),
    [(7.0, "7.0 s"), (0.5, "5.0 s"), (None, "15 s, the most a node waits")],
)
def test_a_busy_cpu_holds_a_model_free_node_for_its_window_but_not_a_model_call(
    store: Store, tmp_path: Path, calm_at: float | None, waited: str
) -> None:
    """Calm again after 7 s: it starts then; calm after 0.5 s: it still has its 5 s breather;
    never calm: it starts after 15 s, saying so."""
    run_id = start_run(store, cpu_graph(tmp_path), {})
    engine = Engine(store, script(tmp_path, [{"output": {"text": "x"}}]))

    def probe(clock: Clock) -> Probe:
        busy = calm_at is None or clock() < calm_at
        return seen(cpu_percent=95 if busy else 10, at=clock())

    engine.gate = gate(store, probe, working=1)
    assert drive(engine, run_id).status == RunStatus.COMPLETED
    assert decided(store, run_id) == [("queue", "cpu", "t"), ("execute", "cpu", "t")]
    queued, started = store.decisions.of_run(run_id)
    assert "CPU 95 % busy, over 80 %" in queued.reason
    assert queued.probe is not None
    assert queued.probe["cpu_percent"] == 95
    assert started.reason.startswith("started after queueing ")
    assert waited in started.reason
    assert queued.node_run_id == nodes_of(store, run_id)["t"].id


# -- providers exhausted --------------------------------------------------------------------------------------


def test_providers_exhausted_pause_the_run_which_resumes_once_one_is_back(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [WORK, llm("a", prompt="{{ t.text }}")], CHAIN)
    run_id = start_run(store, graph, {})
    state = {"p": "unreachable", "q": "unusable"}
    provider = script(tmp_path, [{"output": {"text": "x"}}])
    engine = Engine(store, provider)
    engine.gate = gate(store, lambda clock: seen(providers=dict(state), at=clock()))
    outcome = drive(engine, run_id)
    assert outcome.status == RunStatus.PAUSED
    assert (outcome.error["kind"], outcome.error["rule"], outcome.error["node_id"]) == ("resources", "providers", "a")
    assert "no provider can take a call: p unreachable, q unusable here" in outcome.error["message"]
    assert f"plait resume {run_id}" in outcome.error["message"]
    assert store.runs.get(run_id).status == RunStatus.PAUSED
    assert store.runs.get(run_id).error == outcome.error
    nodes = nodes_of(store, run_id)
    assert (nodes["t"].status, nodes["a"].status) == (NodeStatus.COMPLETED, NodeStatus.PENDING)  # nothing failed
    assert decided(store, run_id) == [("pause", "providers", "a")]

    again = Engine(store, provider)  # resumed while they are still out: decided again, paused again
    again.gate = gate(store, lambda clock: seen(providers=dict(state), at=clock()))
    assert drive(again, run_id).status == RunStatus.PAUSED
    assert decided(store, run_id) == [("pause", "providers", "a"), ("pause", "providers", "a")]

    state["p"] = "ok"
    back = Engine(store, provider)
    back.gate = gate(store, lambda clock: seen(providers=dict(state), at=clock()))
    outcome = drive(back, run_id)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert outcome.output == {"text": "x"}
    assert store.runs.get(run_id).error is None  # the reason it paused is gone with the pause
    assert [n.node_id for n in store.runs.node_runs(run_id) if n.node_id == "t"] == ["t"]  # not executed again
    assert len(decided(store, run_id)) == 2  # a plain execute is not recorded


def test_a_resumed_run_is_decided_again_before_it_continues(store: Store, tmp_path: Path) -> None:
    """Paused before it started (memory, on_memory = pause), resumed while memory is still
    short: its first node is decided and pauses it again, on its node run."""
    graph = graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    run_id = start_run(store, graph, {})
    provider = script(tmp_path, [{"output": {"text": "x"}}])
    for _ in range(2):
        engine = Engine(store, provider)
        engine.gate = gate(store, lambda clock: seen(memory_percent=97, at=clock()), on_memory="pause")
        assert drive(engine, run_id).status == RunStatus.PAUSED
    assert decided(store, run_id) == [("pause", "memory", None), ("pause", "memory", "a")]


# -- priorities -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("short", "priority", "status"),
    [
        ({"memory_percent": 95}, 8, RunStatus.COMPLETED),
        ({"memory_percent": 95}, 7, RunStatus.PAUSED),
        ({"capacity_percent": 5}, 7, RunStatus.COMPLETED),
        ({"capacity_percent": 5}, 6, RunStatus.PAUSED),
    ],
)
def test_priority_8_passes_the_memory_rule_and_7_the_capacity_rule(
    store: Store, tmp_path: Path, short: dict[str, float], priority: int, status: RunStatus
) -> None:
    """The run itself starts (its first decision is made with the resources calm); its node,
    of `priority`, meets the shortage."""
    graph = graph_file(tmp_path, [WORK, llm("a", priority=priority)], CHAIN)
    run_id = start_run(store, graph, {})
    engine = Engine(store, script(tmp_path, [{"output": {"text": "x"}}]))
    started: list[str | None] = []
    engine.events.subscribe(lambda e: started.append(e.node_id) if isinstance(e, NodeStarted) else None)
    engine.gate = gate(store, lambda clock: seen(**(short if started else {}), at=clock()),
                       on_memory="pause", on_capacity="pause", probe_s=0.0005)  # fmt: skip
    assert drive(engine, run_id).status == status
    rule = "memory" if "memory_percent" in short else "capacity"
    assert decided(store, run_id) == ([] if status == RunStatus.COMPLETED else [("pause", rule, "a")])


# -- slots ----------------------------------------------------------------------------------------------------


def test_at_most_max_concurrent_nodes_of_a_run_execute_at_once(store: Store, tmp_path: Path) -> None:
    """Six independent calls: three execute together (the provider holds each call until three
    are in flight, so fewer would hang the test), never four, counted by the events."""
    nodes = [llm(f"n{i}") for i in range(6)]
    graph = graph_file(tmp_path, nodes, [{"source": n["id"], "target": "END", "schema_id": "text"} for n in nodes])
    provider = counting(tmp_path, [{"output": {"text": "x"}}], expected=3)
    run_id = start_run(store, graph, {})
    engine = Engine(store, provider, resources=ResourcesConfig())
    running, most = 0, 0

    def count(event: Any) -> None:
        nonlocal running, most
        running += isinstance(event, NodeStarted) - isinstance(event, NodeCompleted)
        most = max(most, running)

    engine.events.subscribe(count)
    assert drive(engine, run_id).status == RunStatus.COMPLETED
    assert (most, provider.most) == (3, 3)


def test_a_queued_node_gives_its_slot_to_another(store: Store, tmp_path: Path) -> None:
    """One slot: the CODE node queued for the CPU waits without it, so the model call beside it
    executes meanwhile (it would wait for the breather otherwise)."""
    run_id = start_run(store, cpu_graph(tmp_path), {})
    engine = Engine(
        store, script(tmp_path, [{"output": {"text": "x"}}]), resources=ResourcesConfig(max_concurrent_nodes=1)
    )
    order: list[str | None] = []
    engine.events.subscribe(lambda e: order.append(e.node_id) if isinstance(e, NodeCompleted) else None)
    engine.gate = gate(store, lambda clock: seen(cpu_percent=95, at=clock()), working=1)
    assert drive(engine, run_id).status == RunStatus.COMPLETED
    assert order == ["a", "t"]


# -- the network probe ----------------------------------------------------------------------------------------


@pytest.fixture
def listening() -> Iterator[int]:
    """A port of a real loopback server (it accepts connections)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def closed_port() -> int:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        return int(probe_socket.getsockname()[1])


def pool_config(tmp_path: Path, *urls: str, scripted: bool = False) -> PlaitConfig:
    """Remote providers at `urls` (and with `scripted` a scripted one)."""
    (tmp_path / "s.yaml").write_text("responses:\n  - {output: {text: x}}\n")
    providers: list[dict[str, Any]] = [
        {"id": f"r{i}", "kind": "openai", "base_url": url, "models": [{"name": "m"}]} for i, url in enumerate(urls)
    ]
    if scripted:
        providers.append({"id": "s", "kind": "scripted", "file": str(tmp_path / "s.yaml")})
    chat = [f"r{i}/m" for i in range(len(urls))]
    return PlaitConfig.model_validate({"providers": providers, "roles": {"chat": chat}})


def test_the_network_probe_tells_a_reachable_provider_from_an_unreachable_one(tmp_path: Path, listening: int) -> None:
    down, up = f"http://127.0.0.1:{closed_port()}/v1", f"http://127.0.0.1:{listening}/v1"
    assert (reachable(down), reachable(up)) == (False, True)
    config = pool_config(tmp_path, down, up, scripted=True)
    assert provider_states(ProviderPool(config)) == {"r0": "unreachable", "r1": "ok", "s": "ok"}


def test_a_run_whose_only_provider_is_unreachable_pauses_instead_of_failing(store: Store, tmp_path: Path) -> None:
    """The real probe (this machine, the pool, the network) sees the provider down."""
    graph = graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    run_id = start_run(store, graph, {})
    engine = Engine(store, ProviderPool(pool_config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")))
    outcome = drive(engine, run_id)
    assert outcome.status == RunStatus.PAUSED, outcome.error
    (decision,) = store.decisions.of_run(run_id)
    assert (decision.action, decision.rule, decision.node_id) == ("pause", "providers", "a")
    assert decision.probe is not None
    assert decision.probe["providers"] == {"r0": "unreachable"}
    assert store.runs.node_runs(run_id)[0].status == NodeStatus.PENDING


# -- where the decisions are shown ----------------------------------------------------------------------------


def test_plait_runs_show_lists_each_decision_with_its_node(tmp_path: Path) -> None:
    import json

    from tests.plait_cli import run_plait

    db = tmp_path / "runs.db"
    with Store(f"sqlite:///{db}") as store:
        graph = graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
        run_id = start_run(store, graph, {})
        engine = Engine(store, script(tmp_path, [{"output": {"text": "x"}}]))
        engine.gate = gate(store, lambda clock: seen(providers={"p": "unreachable"}, at=clock()))
        assert drive(engine, run_id).status == RunStatus.PAUSED
        node_run_id = nodes_of(store, run_id)["a"].id
    human = run_plait("runs", "show", run_id, "--db", str(db))
    assert human.returncode == 0, human.stderr
    assert "node 'a' pause (providers): no provider can take a call: p unreachable" in " ".join(human.stdout.split())
    shown = run_plait("runs", "show", run_id, "--db", str(db), "--json")
    assert shown.returncode == 0, shown.stderr
    (decision,) = json.loads(shown.stdout)["decisions"]
    assert (decision["node_id"], decision["node_run_id"], decision["action"], decision["rule"]) == (
        "a", node_run_id, "pause", "providers")  # fmt: skip
    assert decision["probe"]["providers"] == {"p": "unreachable"}
