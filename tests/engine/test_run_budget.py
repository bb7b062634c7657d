"""The budget of a run, over the run and all its child runs: a graph whose static bounds pass it
is refused when validated; a run that reaches it at run time (a MAP over a list without
`maxItems`, a long chain, large outputs) fails naming it, having done no more than it allows;
its counts survive a restart. On SQLite and PostgreSQL (the `store` fixture)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from plait.compile import compile_data
from plait.config import RunsConfig
from plait.engine.runner import Engine
from plait.model.enums import RunStatus
from plait.runs.corrections import Corrections
from plait.store import Store
from tests.engine.test_engine import graph_file, start_run

DOUBLE = {"nodes": [{"id": "double", "type": "TRANSFORM", "transform_expr": "({n: input.n * 2})"}], "edges": []}


def fan_out(items: str = "input.xs", max_items: int | None = None) -> dict[str, Any]:
    """A MAP over the input's list `xs` (declaring `max_items` when given) running DOUBLE."""
    listed: dict[str, Any] = {"type": "array", **({"maxItems": max_items} if max_items is not None else {})}
    return {
        "id": "fan",
        "input_schema": {"type": "object", "properties": {"xs": listed}},
        "nodes": [{"id": "each", "type": "MAP", "items": items, "inputs": {"n": "{{ item }}"}, "body": DOUBLE}],
        "edges": [],
    }


def run(store: Store, graph: str, run_input: dict[str, Any], limits: RunsConfig) -> tuple[str, Any]:
    run_id = start_run(store, graph, run_input)

    async def go() -> Any:
        engine = Engine(store, runs=limits)
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    return run_id, asyncio.run(go())


def children_of(store: Store, run_id: str) -> list[Any]:
    return [r for r in store.runs.list(children=True, limit=10_000) if r.parent_run_id == run_id]


def test_static_bounds_past_the_budget_are_refused_when_validated() -> None:
    """LOOP(10,000) × MAP(499,000) × MAP(499,000): validated before, refused now, naming the nesting."""
    inner = fan_out(max_items=499_000)
    middle = {**fan_out(max_items=499_000), "nodes": [{**fan_out()["nodes"][0], "body": inner}]}
    bomb = {
        "id": "bomb",
        "nodes": [{"id": "outer", "type": "LOOP", "while_expr": "true", "max_iterations": 10_000, "body": middle}],
        "edges": [],
    }
    result = compile_data(bomb)
    budget = [d for d in result.errors if d.code == "run_budget"]
    assert len(budget) == 1, result.errors
    assert "499,000 items" in budget[0].message
    assert "max_child_runs" in (budget[0].hint or "")
    assert compile_data(fan_out(max_items=1000)).valid  # 1,000 child runs: within the default budget
    assert compile_data(fan_out()).valid  # no maxItems: counted as one item; bounded at run time


def test_a_map_past_the_child_run_budget_fails_naming_it_having_started_no_more(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, fan_out()["nodes"], [], input_schema=fan_out()["input_schema"])
    run_id, outcome = run(store, graph, {"xs": list(range(30))}, RunsConfig(max_child_runs=10))
    assert outcome.status == RunStatus.FAILED
    assert outcome.error["kind"] == "budget"
    assert outcome.error["budget"] == "max_child_runs"
    assert "budget of 10 child runs" in outcome.error["message"]
    assert len(children_of(store, run_id)) == 10


def test_a_chain_past_the_node_run_budget_stops_at_it(store: Store, tmp_path: Path) -> None:
    chain = [{"id": f"n{i}", "type": "TRANSFORM", "transform_expr": "({n: 1})"} for i in range(8)]
    edges = [{"source": f"n{i}", "target": f"n{i + 1}"} for i in range(7)]
    run_id, outcome = run(store, graph_file(tmp_path, chain, edges), {}, RunsConfig(max_node_runs=5))
    assert (outcome.status, outcome.error["budget"]) == (RunStatus.FAILED, "max_node_runs")
    executed = [n.node_id for n in store.runs.node_runs(run_id) if n.status == "completed"]
    assert executed == ["n0", "n1", "n2", "n3", "n4"]


def test_large_outputs_past_the_stored_bytes_budget_fail_the_run(store: Store, tmp_path: Path) -> None:
    big = "({text: 'x'.repeat(150000)})"  # 150 KB in the output, the attempt, and the next node's snapshot
    chain = [{"id": f"n{i}", "type": "TRANSFORM", "transform_expr": big} for i in range(6)]
    edges = [{"source": f"n{i}", "target": f"n{i + 1}"} for i in range(5)]
    run_id, outcome = run(store, graph_file(tmp_path, chain, edges), {}, RunsConfig(max_stored_bytes=1 << 20))
    assert (outcome.status, outcome.error["budget"]) == (RunStatus.FAILED, "max_stored_bytes")
    stored = [n for n in store.runs.node_runs(run_id) if n.output is not None]
    assert len(stored) == 2  # 300 KB, then 450 KB more; the third would have passed 1 MiB: not stored
    assert store.runs.tree_usage(run_id)[2] < 1 << 20


def test_a_resumed_run_counts_what_its_tree_did_before(store: Store, tmp_path: Path) -> None:
    """A run paused for a review, continued by a fresh engine: the node runs before the pause count."""
    nodes = [
        {"id": "each", "type": "MAP", "items": "input.xs", "inputs": {"n": "{{ item }}"}, "body": DOUBLE},
        {"id": "check", "type": "HUMAN_REVIEW"},
        {"id": "after", "type": "TRANSFORM", "transform_expr": "({n: 1})"},
    ]
    edges = [{"source": "each", "target": "check"}, {"source": "check", "target": "after"}]
    graph = graph_file(tmp_path, nodes, edges)
    run_id, outcome = run(store, graph, {"xs": [1, 2, 3]}, RunsConfig())
    assert outcome.status == RunStatus.PAUSED
    assert store.runs.tree_usage(run_id)[:2] == (3, 5)  # 3 children; MAP, review and 3 DOUBLEs
    Corrections(store).review(run_id, "check", approve=True)
    resumed = Engine(store, runs=RunsConfig(max_node_runs=5))  # `after` would be the 6th node run
    outcome = asyncio.run(resumed.run(run_id))
    assert (outcome.status, outcome.error["budget"]) == (RunStatus.FAILED, "max_node_runs")


@pytest.mark.parametrize("limit", [0, 2])
def test_a_loop_past_the_child_run_budget_fails(store: Store, tmp_path: Path, limit: int) -> None:
    body = {"nodes": [{"id": "step", "type": "TRANSFORM", "transform_expr": "({n: 1})"}], "edges": []}
    loop = {"id": "again", "type": "LOOP", "while_expr": "true", "max_iterations": 10, "body": body}
    run_id, outcome = run(store, graph_file(tmp_path, [loop], []), {}, RunsConfig(max_child_runs=limit))
    assert (outcome.status, outcome.error["budget"]) == (RunStatus.FAILED, "max_child_runs")
    assert len(children_of(store, run_id)) == limit
