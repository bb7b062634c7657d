"""The sandbox shares its evaluators fairly by owner, and a run's owner is its root run: the
expressions of a run and of all its child runs (MAP items, LOOP iterations, SUBGRAPHs, a child
continued on its own) count as one, so a MAP of many spinning items holds one fair share, not
one per item. On SQLite and PostgreSQL (the `store` fixture)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from plait.model.enums import RunStatus
from plait.sandbox import JsSandbox
from plait.store import Store
from tests.engine.test_engine import execute, graph_file
from tests.engine.test_graph_nodes import children_of, drive


@pytest.fixture
def owners(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """Every owner the engine names to the sandbox, in order."""
    seen: list[str | None] = []
    evaluate, call = JsSandbox.aevaluate, JsSandbox.acall

    async def spy_evaluate(self: JsSandbox, *args: Any, owner: str | None = None, **kwargs: Any) -> Any:
        seen.append(owner)
        return await evaluate(self, *args, owner=owner, **kwargs)

    async def spy_call(self: JsSandbox, *args: Any, owner: str | None = None, **kwargs: Any) -> Any:
        seen.append(owner)
        return await call(self, *args, owner=owner, **kwargs)

    monkeypatch.setattr(JsSandbox, "aevaluate", spy_evaluate)
    monkeypatch.setattr(JsSandbox, "acall", spy_call)
    return seen


def test_a_run_and_all_its_child_runs_are_one_owner(store: Store, tmp_path: Path, owners: list[str | None]) -> None:
    # calls in every expression: a plain one (it only reads its scope) is computed without the sandbox
    inner = {
        "nodes": [{"id": "inc", "type": "TRANSFORM", "transform_expr": "({n: Math.abs(input.n) + 1})"}],
        "edges": [],
    }
    item = {
        "nodes": [
            {"id": "double", "type": "TRANSFORM", "transform_expr": "({n: input.n * 2})"},
            {"id": "deeper", "type": "SUBGRAPH", "body": inner, "inputs": {"n": "{{ current.n }}"}},
            {"id": "code", "type": "CODE", "code": "return {n: current.n};"},
        ],
        "edges": [{"source": "double", "target": "deeper"}, {"source": "deeper", "target": "code"}],
    }
    step = {"nodes": [{"id": "step", "type": "TRANSFORM", "transform_expr": "({i: Number(input.loop.iteration)})"}]}
    graph = graph_file(
        tmp_path,
        [
            {"id": "first", "type": "TRANSFORM", "transform_expr": "({values: input.values.slice()})"},
            {"id": "m", "type": "MAP", "items": "current.values", "inputs": {"n": "{{ item }}"}, "body": item},
            {"id": "again", "type": "LOOP", "while_expr": "iteration < 2", "body": {**step, "edges": []}},
        ],
        [{"source": "first", "target": "m"}, {"source": "m", "target": "again"}],
    )
    outcome = execute(store, graph, None, {"values": [1, 2, 3]})
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert len(children_of(store, outcome.run_id)) == 3 + 2  # the MAP's items and the LOOP's iterations
    assert len(owners) >= 1 + 3 * 3 + 3  # first; double, inc, code per item; the while_expr 3 times
    assert set(owners) == {outcome.run_id}


def test_a_child_continued_on_its_own_keeps_its_root_as_owner(
    store: Store, tmp_path: Path, owners: list[str | None]
) -> None:
    from plait.runs.corrections import Corrections

    body = {
        "nodes": [
            {"id": "check", "type": "HUMAN_REVIEW"},
            {"id": "after", "type": "TRANSFORM", "transform_expr": "({text: current.text.concat('!')})"},
        ],
        "edges": [{"source": "check", "target": "after"}],
    }
    graph = graph_file(tmp_path, [{"id": "s", "type": "SUBGRAPH", "body": body}], [])
    paused = execute(store, graph, None, {"text": "draft"})
    assert paused.status == RunStatus.PAUSED
    (child,) = children_of(store, paused.run_id)
    Corrections(store).review(child.id, "check", {"text": "final"})
    assert owners == []
    done = drive(store, child.id)  # the child first, on its own: it finds its root in the store
    assert done.status == RunStatus.COMPLETED
    assert store.runs.get(paused.run_id).output == {"text": "final!"}
    assert owners
    assert set(owners) == {paused.run_id}
