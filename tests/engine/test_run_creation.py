"""`Engine.start` and `start_child` create their run in the transaction of its first claims:
what that transaction refuses is reported as creating a run is, and leaves nothing behind."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from plait.engine.events import Event, RunCompleted, RunStarted
from plait.engine.ports import ChildGraph
from plait.engine.runner import Engine, RunOutcome
from plait.model.enums import NodeStatus, RunStatus
from plait.runs.start import resolve_graph
from plait.store import ChildExists, ChildOf, NotFoundError, RunExists, Store
from tests.engine.test_engine import graph_file, llm, script


def _engine(store: Store, tmp_path: Path) -> Engine:
    return Engine(store, script(tmp_path, [{"output": {"text": "done"}}]))


def _start(engine: Engine, *calls: Any) -> list[RunOutcome | BaseException]:
    async def go() -> list[RunOutcome | BaseException]:
        try:
            return await asyncio.gather(*(call() for call in calls), return_exceptions=True)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def test_a_started_run_exists_with_its_input_claims_and_outcome(store: Store, tmp_path: Path) -> None:
    stored = resolve_graph(
        store, graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    )
    engine = _engine(store, tmp_path)
    events: list[Event] = []
    engine.events.subscribe(events.append)
    (outcome,) = _start(engine, lambda: engine.start(stored, {"topic": "birds"}))
    assert isinstance(outcome, RunOutcome)
    assert outcome.status == RunStatus.COMPLETED
    record = store.runs.get(outcome.run_id)
    assert record.status == RunStatus.COMPLETED
    assert record.input == {"topic": "birds"}
    assert record.lease_owner is None  # the outcome, written with the last node, gave the lease up
    (node_run,) = store.runs.node_runs(outcome.run_id)
    assert node_run.status == NodeStatus.COMPLETED
    # the node's tokens reach the run's totals, added by the outcome's own UPDATE
    assert node_run.tokens_input > 0
    assert (record.tokens_input, record.tokens_output) == (node_run.tokens_input, node_run.tokens_output)
    assert isinstance(events[0], RunStarted)
    assert isinstance(events[-1], RunCompleted)
    assert events[-1].output == outcome.output


def test_starting_under_the_id_of_an_existing_run_raises_run_exists_and_leaves_it(store: Store, tmp_path: Path) -> None:
    stored = resolve_graph(
        store, graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    )
    engine = _engine(store, tmp_path)
    (first,) = _start(engine, lambda: engine.start(stored, {"n": 1}, run_id="run-1"))
    assert isinstance(first, RunOutcome)
    assert first.status == RunStatus.COMPLETED
    engine = _engine(store, tmp_path)
    events: list[Event] = []
    engine.events.subscribe(events.append)
    (second,) = _start(engine, lambda: engine.start(stored, {"n": 2}, run_id="run-1"))
    assert isinstance(second, RunExists)
    record = store.runs.get("run-1")
    assert record.input == {"n": 1}
    assert record.status == RunStatus.COMPLETED
    assert len(store.runs.node_runs("run-1")) == 1
    assert events == []  # no run began: nothing was announced


def test_a_run_of_a_graph_not_in_the_store_raises_not_found(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = resolve_graph(
        store, graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    )
    engine = _engine(store, tmp_path)
    compiled = engine.compiled_for(stored.graph_id, stored.version)
    monkeypatch.setattr(engine, "compiled_for", lambda *args: compiled)  # a graph compiled, then deleted
    missing = dataclasses.replace(stored, version=stored.version + 7)
    (outcome,) = _start(engine, lambda: engine.start(missing, {}))
    assert isinstance(outcome, NotFoundError)
    assert "save the graph first" in str(outcome)


def test_two_engines_starting_the_same_child_one_raises_child_exists(store: Store, tmp_path: Path) -> None:
    stored = resolve_graph(
        store, graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    )
    engine = _engine(store, tmp_path)
    (parent,) = _start(engine, lambda: engine.start(stored, {}))
    assert isinstance(parent, RunOutcome)
    node_run = store.runs.node_runs(parent.run_id)[0]
    engine = _engine(store, tmp_path)
    target = ChildGraph(stored.graph_id, stored.version, stored.schema_version, stored.slug, None,
                        engine.compiled_for(stored.graph_id, stored.version))  # fmt: skip
    child = ChildOf(parent.run_id, node_run.id, 0)
    outcomes = _start(
        engine,
        lambda: engine.start_child(target, {"k": 1}, child),
        lambda: engine.start_child(target, {"k": 2}, child),
    )
    assert sorted(type(o).__name__ for o in outcomes) == ["ChildExists", "RunOutcome"]
    (made,) = store.runs.children(node_run.id)
    won = next(o for o in outcomes if isinstance(o, RunOutcome))
    assert made.id == won.run_id
    assert made.status == RunStatus.COMPLETED
    assert isinstance(next(o for o in outcomes if not isinstance(o, RunOutcome)), ChildExists)


@pytest.mark.parametrize("count", [40])
def test_many_runs_started_at_once_each_write_two_units(
    store: Store, tmp_path: Path, count: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = resolve_graph(
        store, graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    )
    engine = _engine(store, tmp_path)
    units: list[int] = []
    write = store.runs.nodes.write
    monkeypatch.setattr(store.runs.nodes, "write", lambda batch: (units.append(len(batch)), write(batch))[1])
    monkeypatch.setattr(store.runs, "add", None)  # not created apart: in the unit of its first claim
    outcomes = _start(engine, *(lambda i=i: engine.start(stored, {"i": i}) for i in range(count)))
    assert all(isinstance(o, RunOutcome) and o.status == RunStatus.COMPLETED for o in outcomes)
    # per run: its creation with its input and first claim; its node's result with its outcome
    assert sum(units) == 2 * count
    assert len(units) < count  # and units of many runs shared transactions
