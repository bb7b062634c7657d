"""SUBGRAPH, MAP and LOOP: child runs that are full runs, linked to the node run that started
them, gathered into the node's output; bad input fails the node with a clear message. On
SQLite and PostgreSQL (the `store` fixture)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.runner import Engine, RunOutcome
from plait.evolve.files import save_graph_file
from plait.model.enums import NodeStatus, RunStatus
from plait.model.output_meta import CHILD_RUN
from plait.runs.start import start_run
from plait.store import Store
from tests.engine.test_engine import execute, graph_file, nodes_of

DOUBLE = {"nodes": [{"id": "double", "type": "TRANSFORM", "transform_expr": "({n: input.n * 2})"}], "edges": []}
COUNT_UP = {
    "nodes": [
        {
            "id": "step",
            "type": "TRANSFORM",
            "transform_expr": "({n: (input.loop.previous ? input.loop.previous.n : 0) + 1, "
            "seen: input.loop.iteration})",
        }
    ],
    "edges": [],
}


def children_of(store: Store, run_id: str) -> list[Any]:
    return [r for r in store.runs.list(children=True, limit=10_000) if r.parent_run_id == run_id]


def write(tmp_path: Path, name: str, data: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"plait": 1, **data}, sort_keys=False))
    return path


# -- SUBGRAPH ---------------------------------------------------------------------------------------------------


def test_a_subgraph_child_is_a_full_run_linked_to_the_node_run(store: Store, tmp_path: Path) -> None:
    body = {"nodes": [{"id": "inc", "type": "TRANSFORM", "transform_expr": "({n: input.n + 1})"}], "edges": []}
    graph = graph_file(
        tmp_path,
        [
            {"id": "sub", "type": "SUBGRAPH", "body": body, "inputs": {"n": "{{ input.start }}"}},
            {"id": "after", "type": "TRANSFORM", "transform_expr": "({n: current.n * 10})"},
        ],
        [{"source": "sub", "target": "after"}],
    )
    outcome = execute(store, graph, None, {"start": 1})
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"n": 20}
    (child,) = children_of(store, outcome.run_id)
    sub_run = nodes_of(store, outcome.run_id)["sub"]
    assert (child.parent_node_run_id, child.child_key, child.body) == (sub_run.id, 0, "sub")
    assert child.input == {"n": 1}
    assert child.output == {"n": 2}
    assert child.status == RunStatus.COMPLETED
    assert sub_run.output[CHILD_RUN] == child.id  # the write-back names the child run
    assert [r.id for r in store.runs.list()] == [outcome.run_id]  # children are listed on request only


def test_a_stored_subgraph_runs_its_newest_version_or_the_pinned_one(store: Store, tmp_path: Path) -> None:
    step = {"id": "step", "nodes": [{"id": "v", "type": "TRANSFORM", "transform_expr": "({v: 1})"}], "edges": []}
    save_graph_file(store, write(tmp_path, "step.yaml", step))
    step["nodes"][0]["transform_expr"] = "({v: 2})"
    save_graph_file(store, write(tmp_path, "step.yaml", step))
    newest = graph_file(tmp_path, [{"id": "s", "type": "SUBGRAPH", "graph": "step"}], [])
    pinned = graph_file(tmp_path, [{"id": "s", "type": "SUBGRAPH", "graph": "step", "graph_version": 1}], [])
    assert execute(store, newest).output == {"v": 2}
    assert execute(store, pinned).output == {"v": 1}


def test_a_missing_stored_graph_fails_the_node_saying_how_to_fix_it(store: Store, tmp_path: Path) -> None:
    outcome = execute(store, graph_file(tmp_path, [{"id": "s", "type": "SUBGRAPH", "graph": "nowhere"}], []))
    assert outcome.status == RunStatus.FAILED
    error = nodes_of(store, outcome.run_id)["s"].error
    assert error["kind"] == "not_found"
    assert "runs the graph 'nowhere', which is not stored" in error["message"]
    assert "plait graphs import" in error["message"]


def test_stored_graphs_that_run_each_other_are_a_cycle(store: Store, tmp_path: Path) -> None:
    ping = {"id": "ping", "nodes": [{"id": "s", "type": "SUBGRAPH", "graph": "pong"}], "edges": []}
    pong = {"id": "pong", "nodes": [{"id": "s", "type": "SUBGRAPH", "graph": "ping"}], "edges": []}
    save_graph_file(store, write(tmp_path, "pong.yaml", pong))
    outcome = execute(store, str(write(tmp_path, "ping.yaml", ping)))
    assert outcome.status == RunStatus.FAILED
    (child,) = children_of(store, outcome.run_id)
    error = nodes_of(store, child.id)["s"].error
    assert error["kind"] == "cycle"
    assert "graphs run each other in a cycle: ping → pong → ping" in error["message"]


def test_a_child_input_that_breaks_the_child_graphs_input_schema_fails_the_node(store: Store, tmp_path: Path) -> None:
    body = {
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        **DOUBLE,
    }
    graph = graph_file(tmp_path, [{"id": "s", "type": "SUBGRAPH", "body": body, "inputs": {"n": "text"}}], [])
    outcome = execute(store, graph)
    error = nodes_of(store, outcome.run_id)["s"].error
    assert error["kind"] == "input"
    assert "does not match the input_schema" in error["message"]
    assert children_of(store, outcome.run_id) == []  # nothing invalid was stored


def test_a_child_that_pauses_for_review_pauses_the_parent_until_it_is_answered(store: Store, tmp_path: Path) -> None:
    from plait.runs.corrections import Corrections

    body = {"nodes": [{"id": "check", "type": "HUMAN_REVIEW"}], "edges": []}
    graph = graph_file(tmp_path, [{"id": "s", "type": "SUBGRAPH", "body": body}], [])
    paused = execute(store, graph, None, {"text": "draft"})
    assert paused.status == RunStatus.PAUSED
    (child,) = children_of(store, paused.run_id)
    assert child.status == RunStatus.PAUSED
    Corrections(store).review(child.id, "check", {"text": "final"})
    done = drive(store, child.id)  # continuing the child continues the parent waiting for it
    assert done.status == RunStatus.COMPLETED
    parent = store.runs.get(paused.run_id)
    assert parent.status == RunStatus.COMPLETED
    assert parent.output == {"text": "final"}


# -- MAP -----------------------------------------------------------------------------------------------------


def test_map_gathers_outputs_in_order_with_one_child_per_item(store: Store, tmp_path: Path) -> None:
    body = {
        "nodes": [
            {"id": "wait", "type": "WAIT", "delay_s": 0.0},
            {"id": "double", "type": "TRANSFORM", "transform_expr": "({n: current.n * 2, at: input.at})"},
        ],
        "edges": [{"source": "wait", "target": "double"}],
    }
    node = {
        "id": "m",
        "type": "MAP",
        "items": "input.values",
        "inputs": {"n": "{{ item }}", "at": "{{ index }}"},
        "max_concurrency": 3,
        "body": body,
    }
    outcome = execute(store, graph_file(tmp_path, [node], []), None, {"values": [5, 1, 4, 2, 3]})
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == [
        {"n": 10, "at": 0},
        {"n": 2, "at": 1},
        {"n": 8, "at": 2},
        {"n": 4, "at": 3},
        {"n": 6, "at": 4},
    ]
    children = sorted(children_of(store, outcome.run_id), key=lambda r: r.child_key)
    assert [c.child_key for c in children] == [0, 1, 2, 3, 4]
    assert all(c.status == RunStatus.COMPLETED for c in children)


def test_map_runs_at_most_max_concurrency_items_at_once(store: Store, tmp_path: Path) -> None:
    body = {"nodes": [{"id": "wait", "type": "WAIT", "delay_s": 0.2}], "edges": []}
    node = {"id": "m", "type": "MAP", "items": "input.values", "max_concurrency": 2, "body": body}
    outcome = execute(store, graph_file(tmp_path, [node], []), None, {"values": [{"i": i} for i in range(6)]})
    assert outcome.status == RunStatus.COMPLETED
    spans = [(c.started_at, c.completed_at) for c in children_of(store, outcome.run_id)]
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most == 2


def test_map_over_something_that_is_not_a_list_fails_saying_what_it_found(store: Store, tmp_path: Path) -> None:
    node = {"id": "m", "type": "MAP", "items": "input.values", "body": DOUBLE}
    outcome = execute(store, graph_file(tmp_path, [node], []), None, {"values": {"n": 1}})
    error = nodes_of(store, outcome.run_id)["m"].error
    assert error["kind"] == "input"
    assert error["message"] == "node 'm': items 'input.values' is a dict, not a list; point `items` at a list"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("skip", [{"n": 2}, {"n": 6}]),
        ("collect", [{"n": 2}, "error", {"n": 6}]),
    ],
)
def test_map_skips_or_collects_failed_items(store: Store, tmp_path: Path, policy: str, expected: list[Any]) -> None:
    body = {
        "nodes": [
            {"id": "double", "type": "TRANSFORM", "transform_expr": "input.n == 2 ? boom() : ({n: input.n * 2})"}
        ],
        "edges": [],
    }
    node = {"id": "m", "type": "MAP", "items": "input.values", "on_item_error": policy, "body": body}
    outcome = execute(store, graph_file(tmp_path, [node], []), None, {"values": [{"n": 1}, {"n": 2}, {"n": 3}]})
    assert outcome.status == RunStatus.COMPLETED
    got = ["error" if isinstance(v, dict) and "error" in v else v for v in outcome.output]
    assert got == expected
    if policy == "collect":
        assert outcome.output[1]["index"] == 1
        assert "ended failed" in outcome.output[1]["error"]["message"]


def test_map_fails_on_a_failed_item_by_default_and_names_it(store: Store, tmp_path: Path) -> None:
    body = {"nodes": [{"id": "x", "type": "TRANSFORM", "transform_expr": "boom()"}], "edges": []}
    node = {"id": "m", "type": "MAP", "items": "input.values", "max_concurrency": 1, "body": body}
    outcome = execute(store, graph_file(tmp_path, [node], []), None, {"values": [{"n": 1}, {"n": 2}]})
    assert outcome.status == RunStatus.FAILED
    error = nodes_of(store, outcome.run_id)["m"].error
    assert error["kind"] == "item_failed"
    assert error["message"].startswith("node 'm': item 0 failed: ")
    assert len(children_of(store, outcome.run_id)) == 1  # no item starts after the first failure


# -- LOOP ----------------------------------------------------------------------------------------------------


def test_loop_repeats_while_the_expression_holds_and_the_body_sees_the_loop(store: Store, tmp_path: Path) -> None:
    node = {"id": "l", "type": "LOOP", "while_expr": "last === null || last.n < 3", "body": COUNT_UP}
    outcome = execute(store, graph_file(tmp_path, [node], []))
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"n": 3, "seen": 2}
    children = sorted(children_of(store, outcome.run_id), key=lambda r: r.child_key)
    assert [c.input["loop"]["iteration"] for c in children] == [0, 1, 2]
    assert children[1].input["loop"]["previous"] == {"n": 1, "seen": 0}
    assert nodes_of(store, outcome.run_id)["l"].output[CHILD_RUN] == children[-1].id


def test_a_loop_that_never_ends_stops_at_max_iterations_and_says_so(store: Store, tmp_path: Path) -> None:
    node = {"id": "l", "type": "LOOP", "while_expr": "true", "max_iterations": 3, "body": COUNT_UP}
    outcome = execute(store, graph_file(tmp_path, [node], []))
    assert outcome.status == RunStatus.FAILED
    error = nodes_of(store, outcome.run_id)["l"].error
    assert error["kind"] == "max_iterations"
    assert "reached max_iterations (3) with while_expr still true" in error["message"]
    assert "on_max_iterations: stop" in error["message"]
    assert len(children_of(store, outcome.run_id)) == 3

    stop = {**node, "on_max_iterations": "stop"}
    kept = execute(store, graph_file(tmp_path, [stop], []))
    assert kept.status == RunStatus.COMPLETED
    assert kept.output == {"n": 3, "seen": 2}
    assert "max_iterations" in nodes_of(store, kept.run_id)["l"].input_snapshot["stopped"]


def test_a_loop_that_never_starts_passes_its_input_on(store: Store, tmp_path: Path) -> None:
    node = {"id": "l", "type": "LOOP", "while_expr": "false", "body": COUNT_UP}
    outcome = execute(store, graph_file(tmp_path, [node], []), None, {"n": 7})
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"n": 7}
    assert children_of(store, outcome.run_id) == []


# -- corrections inside a child --------------------------------------------------------------------------------


def drive(store: Store, run_id: str) -> RunOutcome:
    from plait.runs.children import settle

    async def go() -> RunOutcome:
        engine = Engine(store, child_settled=settle(store))
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def sub_then_after(tmp_path: Path) -> str:
    body = {"nodes": [{"id": "inc", "type": "TRANSFORM", "transform_expr": "({n: input.n + 1})"}], "edges": []}
    return graph_file(
        tmp_path,
        [
            {"id": "sub", "type": "SUBGRAPH", "body": body},
            {"id": "after", "type": "TRANSFORM", "transform_expr": "({n: current.n * 10})"},
        ],
        [{"source": "sub", "target": "after"}],
    )


def test_an_override_inside_a_subgraph_child_reaches_the_parent_node(store: Store, tmp_path: Path) -> None:
    from plait.runs.corrections import Corrections

    outcome = execute(store, sub_then_after(tmp_path), None, {"n": 1})
    (child,) = children_of(store, outcome.run_id)
    result = Corrections(store).override(child.id, "inc", {"n": 5})
    assert result.parent is not None
    assert result.parent.run_id == outcome.run_id
    assert result.parent.stale == ["after"]  # INVALIDATE, as the child's correction said
    sub = nodes_of(store, outcome.run_id)["sub"]
    assert sub.status == NodeStatus.OVERRIDDEN
    assert sub.effective_output == {"n": 5, CHILD_RUN: child.id}
    assert sub.output["n"] == 2  # the original stays
    assert nodes_of(store, outcome.run_id)["after"].status == NodeStatus.STALE


def test_a_child_correction_that_leaves_its_output_as_it_was_leaves_the_parent_alone(
    store: Store, tmp_path: Path
) -> None:
    """The child's output is what the parent node gathered: nothing changes upstream, so the
    parent node is not corrected and what read it is not marked stale."""
    from plait.runs.corrections import Corrections

    outcome = execute(store, sub_then_after(tmp_path), None, {"n": 1})
    (child,) = children_of(store, outcome.run_id)
    result = Corrections(store).override(child.id, "inc", {"n": 2})  # what `inc` computed
    assert result.parent is None
    parent_nodes = nodes_of(store, outcome.run_id)
    assert parent_nodes["sub"].status == NodeStatus.COMPLETED
    assert parent_nodes["after"].status == NodeStatus.COMPLETED


def test_a_rerun_policy_inside_a_child_reruns_the_parents_downstream(store: Store, tmp_path: Path) -> None:
    from plait.model.enums import DownstreamPolicy
    from plait.runs.corrections import Corrections

    graph = graph_file(
        tmp_path,
        [
            {
                "id": "sub",
                "type": "SUBGRAPH",
                "body": {
                    "nodes": [
                        {"id": "inc", "type": "TRANSFORM", "transform_expr": "({n: input.n + 1})"},
                        {"id": "twice", "type": "TRANSFORM", "transform_expr": "({n: current.n * 2})"},
                    ],
                    "edges": [{"source": "inc", "target": "twice"}],
                },
            },
            {"id": "after", "type": "TRANSFORM", "transform_expr": "({n: current.n + 1000})"},
        ],
        [{"source": "sub", "target": "after"}],
    )
    outcome = execute(store, graph, None, {"n": 1})
    assert outcome.output == {"n": 1004}
    (child,) = children_of(store, outcome.run_id)
    result = Corrections(store).override(child.id, "inc", {"n": 10}, policy=DownstreamPolicy.RERUN_ALL)
    assert result.needs_run
    assert result.parent is None
    drive(store, child.id)
    assert store.runs.get(child.id).output == {"n": 20}
    parent = store.runs.get(outcome.run_id)
    assert parent.status == RunStatus.COMPLETED
    assert parent.output == {"n": 1020}


def test_correcting_one_map_item_gathers_the_list_again(store: Store, tmp_path: Path) -> None:
    from plait.runs.corrections import Corrections

    node = {"id": "m", "type": "MAP", "items": "input.values", "inputs": {"n": "{{ item }}"}, "body": DOUBLE}
    outcome = execute(store, graph_file(tmp_path, [node], []), None, {"values": [1, 2, 3]})
    second = next(c for c in children_of(store, outcome.run_id) if c.child_key == 1)
    Corrections(store).override(second.id, "double", {"n": 40})
    gathered = nodes_of(store, outcome.run_id)["m"]
    assert gathered.effective_output == [{"n": 2}, {"n": 40}, {"n": 6}]
    assert store.runs.get(outcome.run_id).output == [{"n": 2}, {"n": 40}, {"n": 6}]


def test_a_start_run_of_a_graph_file_body_embeds_the_file(store: Store, tmp_path: Path) -> None:
    write(tmp_path, "double.yaml", {"id": "double", **DOUBLE})
    graph = graph_file(tmp_path, [{"id": "s", "type": "SUBGRAPH", "graph": "double.yaml"}], [])
    run_id = start_run(store, graph, {"n": 4})
    stored = store.graphs.get(store.runs.get(run_id).graph_id).graph
    assert stored.nodes[0].body is not None
    assert stored.nodes[0].body["id"] == "double"
    (tmp_path / "double.yaml").unlink()  # a run never reads the file again

    async def go() -> RunOutcome:
        engine = Engine(store)
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    assert asyncio.run(go()).output == {"n": 8}


def test_a_maps_node_run_counts_the_tokens_its_children_spent(store: Store, tmp_path: Path) -> None:
    from tests.engine.test_engine import script

    body = {"nodes": [{"id": "say", "type": "LLM_CALL", "user_prompt_tpl": "say {{ input.n }}"}], "edges": []}
    provider = script(tmp_path, [{"node": "say", "text": "ok", "usage": {"input": 7, "output": 3}}])
    node = {"id": "m", "type": "MAP", "items": "input.values", "inputs": {"n": "{{ item }}"}, "body": body}
    outcome = execute(store, graph_file(tmp_path, [node], []), provider, {"values": [1, 2, 3]})
    assert outcome.status == RunStatus.COMPLETED
    mapped = nodes_of(store, outcome.run_id)["m"]
    assert (mapped.tokens_input, mapped.tokens_output) == (21, 9)
    run = store.runs.get(outcome.run_id)
    assert (run.tokens_input, run.tokens_output) == (21, 9)  # the run's totals include its children's
