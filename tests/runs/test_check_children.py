"""`runs check` of a MAP's child runs: a child whose current output its MAP does not hold is
reported, and checking many children reads the parent run once, not once per child (a
1,000-item MAP took ~9 s to check when each child read it again and compared every item)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from plait.model.enums import RunStatus
from plait.runs.check import check_run
from plait.runs.start import start_run
from plait.store import Store, current_activations
from plait.store.models import GRAPH_RUN
from tests.engine.test_engine import graph_file
from tests.runs.test_corrections import drive_with

ITEMS = 12
BODY = {
    "input_schema": {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]},
    "nodes": [{"id": "inner", "type": "TRANSFORM", "transform_expr": "({v: input.v + '~'})"}],
}


def mapped(tmp_path: Path, store: Store) -> tuple[str, Any]:
    """A completed run of a MAP over `ITEMS` items; its id and the MAP's node run."""
    graph = graph_file(
        tmp_path,
        [{"id": "m", "type": "MAP", "items": "input.xs", "inputs": {"v": "{{ item }}"}, "body": BODY}],
        [],
        input_schema={"type": "object", "properties": {"xs": {"type": "array"}}, "required": ["xs"]},
    )
    run_id = start_run(store, graph, {"xs": [f"x{i}" for i in range(ITEMS)]})
    assert drive_with(store, run_id, None).status == RunStatus.COMPLETED
    return run_id, current_activations(store.runs.node_runs(run_id))["m"]


def test_checking_many_children_reads_their_parent_once(
    tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, _ = mapped(tmp_path, store)
    reads: list[str] = []
    node_runs = store.runs.node_runs
    monkeypatch.setattr(store.runs, "node_runs", lambda run: reads.append(run) or node_runs(run))
    check = check_run(store, run_id)
    assert check.problems == []
    assert check.checked == 1 + ITEMS
    assert reads.count(run_id) == 1  # not once more per child


def test_a_child_output_its_map_does_not_hold_is_reported(tmp_path: Path, store: Store) -> None:
    run_id, node_run = mapped(tmp_path, store)
    child = store.runs.children(node_run.id)[5]
    with store.db.begin() as conn:  # past every correction: the child's output changes, its MAP is not told
        conn.execute(
            update(GRAPH_RUN)
            .where(GRAPH_RUN.c.id == child.id)
            .values(output_json={"v": "changed"}, updated_at=time.time() + 1)
        )
    problems = check_run(store, run_id).problems
    found = {(p.kind, p.node_id): p.message for p in problems}
    assert set(found) == {("child_output_not_gathered", "m"), ("output_mismatch", "inner")}  # the child's own too
    assert child.id in found[("child_output_not_gathered", "m")]
