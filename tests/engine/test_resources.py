"""Resource-aware decisions before a new run starts (before each node:
tests/engine/test_node_resources.py): the defaults (disk under 1 GB rejects, memory over 85 %
queues, the providers' free capacity under 20 % queues), each action (queue until the resource
frees, pause, degrade to `[pool] degrade_to`, reject), every decision recorded on the run with
its probe; the probe itself reads the real machine."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from plait.config import PlaitConfig, ResourcesConfig
from plait.engine.resources import Probe, ResourceGate, probe
from plait.engine.runner import Engine
from plait.llm.pool import ProviderPool
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.store import Store
from tests.engine.test_engine import graph_file, llm, script

CALM = Probe(cpu_percent=10, memory_percent=40, disk_free_gb=50, capacity_percent=100, at=0)


def seen(**changed: Any) -> Probe:
    return Probe(**{**CALM.as_json(), **changed, "at": time.time()})


class Scripted(ResourceGate):
    """A gate whose probes come from a list (the last one repeats)."""

    def __init__(self, config: ResourcesConfig, store: Store, probes: list[Probe], in_flight: int = 0):
        super().__init__(config, store, None, lambda: in_flight)
        self.probes = probes

    def probe(self) -> Probe:
        return self.probes.pop(0) if len(self.probes) > 1 else self.probes[0]


def gate_of(store: Store, probes: list[Probe], in_flight: int = 0, **config: Any) -> Scripted:
    return Scripted(ResourcesConfig(**config), store, probes, in_flight)


@pytest.mark.parametrize(
    ("probe_seen", "in_flight", "expected"),
    [
        (seen(disk_free_gb=0.5), 0, ("reject", "disk")),
        (seen(memory_percent=90), 0, ("queue", "memory")),
        (seen(capacity_percent=10), 0, ("queue", "capacity")),
        (seen(cpu_percent=95), 3, None),  # the CPU is decided node by node (tests/engine/test_node_resources.py)
        (seen(disk_free_gb=0.5, memory_percent=90), 0, ("reject", "disk")),  # disk first
        (CALM, 5, None),
    ],
)
def test_the_seeds_defaults_decide(store: Store, probe_seen: Probe, in_flight: int, expected: Any) -> None:
    verdict = gate_of(store, [probe_seen], in_flight).verdict(probe_seen)
    assert (None if verdict is None else (verdict.action, verdict.rule)) == expected


@pytest.mark.parametrize(
    ("probe_seen", "expected"),
    [
        (seen(capacity_percent=10), None),
        (seen(memory_percent=90), ("queue", "memory")),
        (seen(disk_free_gb=0.5), ("reject", "disk")),
    ],
)
def test_a_caller_that_bounds_its_runs_itself_is_not_queued_for_provider_capacity(
    store: Store, probe_seen: Probe, expected: Any
) -> None:
    verdict = gate_of(store, [probe_seen], 3).verdict(probe_seen, bounded=True)
    assert (None if verdict is None else (verdict.action, verdict.rule)) == expected


def new_run(store: Store, tmp_path: Path) -> tuple[str, Any]:
    graph = graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    return start_run(store, graph, {}), script(tmp_path, [{"output": {"text": "done"}}])


def drive(engine: Engine, run_id: str) -> Any:
    async def go() -> Any:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def test_a_run_queued_for_memory_starts_once_memory_frees_and_both_decisions_are_recorded(
    store: Store, tmp_path: Path
) -> None:
    run_id, provider = new_run(store, tmp_path)
    engine = Engine(store, provider)
    engine.gate = gate_of(store, [seen(memory_percent=92), seen(memory_percent=92), seen(memory_percent=91), CALM])
    outcome = drive(engine, run_id)
    assert outcome.status == RunStatus.COMPLETED
    decisions = store.decisions.of_run(run_id)
    assert [(d.action, d.rule) for d in decisions] == [("queue", "memory"), ("execute", "memory")]
    assert "memory 92 % used, over 85 %" in decisions[0].reason
    assert decisions[0].probe is not None
    assert decisions[0].probe["memory_percent"] == 92
    assert "after queueing" in decisions[1].reason


def test_a_run_queued_past_the_limit_starts_anyway_saying_so(store: Store, tmp_path: Path) -> None:
    run_id, provider = new_run(store, tmp_path)
    engine = Engine(store, provider)
    engine.gate = gate_of(store, [seen(capacity_percent=5)], queue_max_s=0.5)
    started = time.monotonic()
    assert drive(engine, run_id).status == RunStatus.COMPLETED
    assert time.monotonic() - started >= 0.5
    on_run = [d for d in store.decisions.of_run(run_id) if d.node_id is None]
    assert (on_run[-1].action, on_run[-1].rule) == ("execute", "capacity")
    assert "the most a run waits" in on_run[-1].reason
    on_node = [(d.action, d.rule, d.node_id) for d in store.decisions.of_run(run_id) if d.node_id is not None]
    assert on_node == [("queue", "capacity", "a"), ("execute", "capacity", "a")]  # its model call is decided too


def test_low_disk_rejects_a_new_run_with_the_reason(store: Store, tmp_path: Path) -> None:
    run_id, provider = new_run(store, tmp_path)
    engine = Engine(store, provider)
    engine.gate = gate_of(store, [seen(disk_free_gb=0.2)])
    outcome = drive(engine, run_id)
    assert outcome.status == RunStatus.FAILED
    assert outcome.error["kind"] == "resources"
    assert "0.20 GB of disk free, under 1 GB" in outcome.error["message"]
    assert store.runs.node_runs(run_id) == []  # nothing was executed
    assert [d.action for d in store.decisions.of_run(run_id)] == ["reject"]


def test_a_run_paused_for_resources_is_resumed_as_any_paused_run(store: Store, tmp_path: Path) -> None:
    """Resumed once memory is back, it completes (resumed while memory is still short, its
    first node pauses it again: tests/engine/test_node_resources.py)."""
    run_id, provider = new_run(store, tmp_path)
    engine = Engine(store, provider)
    engine.gate = gate_of(store, [seen(memory_percent=99)], on_memory="pause")
    assert drive(engine, run_id).status == RunStatus.PAUSED
    again = Engine(store, provider)
    again.gate = gate_of(store, [CALM], on_memory="pause")
    assert drive(again, run_id).status == RunStatus.COMPLETED


def test_a_degraded_run_sends_its_model_calls_to_degrade_to(store: Store, tmp_path: Path) -> None:
    (tmp_path / "main.yaml").write_text("responses:\n  - {output: {text: main}}\n")
    (tmp_path / "small.yaml").write_text("responses:\n  - {output: {text: small}}\n")
    config = PlaitConfig.model_validate({
        "providers": [{"id": "main", "kind": "scripted", "file": str(tmp_path / "main.yaml")},
                      {"id": "small", "kind": "scripted", "file": str(tmp_path / "small.yaml")}],
        "roles": {"chat": ["main/scripted"]},
        "pool": {"degrade_to": "small/scripted"},
    })  # fmt: skip
    graph = graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    run_id = start_run(store, graph, {})
    engine = Engine(store, ProviderPool(config))
    engine.gate = gate_of(store, [seen(capacity_percent=1)], on_capacity="degrade")
    outcome = drive(engine, run_id)
    assert outcome.output == {"text": "small"}
    (node,) = store.runs.node_runs(run_id)
    events = [d["event"] for d in node.attempts[-1]["decisions"]]
    assert events[0] == "degraded"


def test_the_probe_reads_this_machine(tmp_path: Path) -> None:
    now = probe(str(tmp_path), None)
    assert 0 <= now.memory_percent <= 100
    assert now.disk_free_gb > 0
    assert now.capacity_percent is None  # no pool
