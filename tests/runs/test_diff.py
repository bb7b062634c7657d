"""Run diff (SPEC §4): real runs on both backends compared node by node, plus the comparison rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from plait.model.enums import NodeStatus, RunStatus
from plait.model.output_meta import strip_meta_deep
from plait.runs.diff import (
    Change,
    NodeSide,
    Verdict,
    compare_values,
    diff_node,
    diff_runs,
)
from plait.store import NodeRunRecord, NotFoundError, Store, current_activations
from tests.engine.test_engine import TEXT, execute, graph_file, llm, script

CHAIN = [{"source": "a", "target": "b", "schema_id": "text"}, {"source": "b", "target": "END", "schema_id": "text"}]


def run_chain(store: Store, tmp_path: Path, graph: str, a: str, b: str) -> str:
    provider = script(tmp_path, [{"node": "a", "output": {"text": a}}, {"node": "b", "output": {"text": b}}])
    outcome = execute(store, graph, provider)
    assert outcome.status == RunStatus.COMPLETED
    return outcome.run_id


def verdicts(diff: Any) -> dict[str, str]:
    return {n.node_id: n.verdict.value for n in diff.nodes}


# ------------------------------------------------------------------------------- real runs


def test_identical_runs_are_the_same_node_by_node_in_topological_order(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("b", "{{ a.text }}"), llm("a")], CHAIN)  # file order: b before a
    first = run_chain(store, tmp_path, graph, "x", "y")
    second = run_chain(store, tmp_path, graph, "x", "y")
    diff = diff_runs(store, first, second)
    assert [n.node_id for n in diff.nodes] == ["a", "b"]  # a feeds b
    assert verdicts(diff) == {"a": "same", "b": "same"}
    assert diff.outputs_equal
    assert diff.same_graph
    assert diff.same_version
    assert diff.counts() == {"same": 2, "changed": 0, "status": 0, "only_a": 0, "only_b": 0}
    side = diff.nodes[0].a
    assert side is not None
    assert side.output == {"text": "x"}  # the stored value carries _schema_id/_schema_version: stripped
    assert (side.status, side.activation) == ("completed", 1)


def test_different_answers_are_changed_with_field_paths_and_text_diffs(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a"), llm("b", "{{ a.text }}")], CHAIN)
    first = run_chain(store, tmp_path, graph, "x", "line one\nline two\nline three\n")
    second = run_chain(store, tmp_path, graph, "x", "line one\nline 2\nline three\n")
    diff = diff_runs(store, first, second)
    assert verdicts(diff) == {"a": "same", "b": "changed"}
    assert not diff.outputs_equal
    b = diff.nodes[1]
    assert b.changes == [
        Change("$.text", "changed", "line one\nline two\nline three\n", "line one\nline 2\nline three\n")
    ]
    assert set(b.text_diffs) == {"$.text"}
    assert "-line two\n+line 2\n" in b.text_diffs["$.text"]
    document = diff.to_json()
    assert document["nodes"][1]["changes"] == [
        {"path": "$.text", "kind": "changed", "old": b.changes[0].old, "new": b.changes[0].new}
    ]
    assert document["a"]["id"] == first
    assert document["b"]["id"] == second


def test_versions_of_one_graph_give_only_a_and_only_b_nodes(store: Store, tmp_path: Path) -> None:
    v1 = graph_file(tmp_path, [llm("a"), llm("b")], CHAIN)
    v2 = graph_file(tmp_path, [llm("a"), llm("c")], [{"source": "a", "target": "c", "schema_id": "text"}])
    first = run_chain(store, tmp_path, v1, "x", "y")
    provider = script(tmp_path, [{"node": "a", "output": {"text": "x"}}, {"node": "c", "output": {"text": "z"}}])
    second = execute(store, v2, provider).run_id
    diff = diff_runs(store, first, second)
    assert [(n.node_id, n.verdict.value) for n in diff.nodes] == [("a", "same"), ("b", "only_a"), ("c", "only_b")]
    assert diff.same_graph
    assert not diff.same_version
    assert (diff.a.graph_version, diff.b.graph_version) == (1, 2)
    only_a = diff.nodes[1]
    assert only_a.b is None
    assert only_a.a is not None
    assert only_a.a.output == {"text": "y"}


def test_schema_annotations_never_make_outputs_differ(store: Store, tmp_path: Path) -> None:
    v1 = graph_file(tmp_path, [llm("a"), llm("b")], CHAIN)
    v2 = graph_file(tmp_path, [llm("a"), llm("b")], CHAIN, schemas=[{"id": "text", "version": "2.0.0", "schema": TEXT}])
    first, second = run_chain(store, tmp_path, v1, "x", "y"), run_chain(store, tmp_path, v2, "x", "y")
    assert (
        store.runs.node_runs(first)[0].output["_schema_version"]
        != store.runs.node_runs(second)[0].output["_schema_version"]
    )  # the annotations really differ
    diff = diff_runs(store, first, second)
    assert verdicts(diff) == {"a": "same", "b": "same"}
    assert not diff.same_version


def test_a_node_that_never_ran_is_compared_as_not_run(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a", max_retries=0), llm("b")], CHAIN)
    failed = execute(store, graph, script(tmp_path, [{"node": "a", "text": "not json"}])).run_id
    done = run_chain(store, tmp_path, graph, "x", "y")
    diff = diff_runs(store, failed, done)
    assert diff.a.status == "failed"
    assert diff.b.status == "completed"
    a, b = diff.nodes
    assert a.a is not None
    assert a.a.status == "failed"
    assert a.verdict is Verdict.CHANGED
    assert b.a == NodeSide(status=None)  # in A's graph, never reached: not "only in B"
    assert b.verdict is Verdict.CHANGED
    assert b.changes == [Change("$", "changed", None, {"text": "y"})]


def test_unknown_run_ids_raise_not_found(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a"), llm("b")], CHAIN)
    known = run_chain(store, tmp_path, graph, "x", "y")
    with pytest.raises(NotFoundError, match="no run 'missing'"):
        diff_runs(store, known, "missing")
    with pytest.raises(NotFoundError, match="no run 'missing'"):
        diff_runs(store, "missing", known)


# --------------------------------------------------------------------------- the rules alone


def node_run(node_id: str, activation: int, output: Any, status: NodeStatus = NodeStatus.COMPLETED) -> NodeRunRecord:
    return NodeRunRecord(
        id=f"{node_id}-{activation}", run_id="r", node_id=node_id, activation=activation, status=status,
        input_snapshot=None, output=output, override=None, override_by=None, override_at=None, override_note=None,
        downstream_policy=None, attempts=[], error=None, tokens_input=0, tokens_output=0, cost_usd=0.0, owner=None,
        claims=1, created_at=0.0, started_at=None, completed_at=None,
    )  # fmt: skip


def test_the_highest_activation_is_the_current_node_run_whatever_the_order() -> None:
    records = [node_run("a", 2, "rerun"), node_run("b", 1, "b"), node_run("a", 3, "latest"), node_run("a", 1, "first")]
    current = current_activations(records)
    assert {k: v.id for k, v in current.items()} == {"a": "a-3", "b": "b-1"}
    assert current_activations([]) == {}


def test_same_output_with_another_status_is_a_status_verdict() -> None:
    a = NodeSide("completed", 1, {"x": 1})
    assert diff_node("n", a, NodeSide("overridden", 1, {"x": 1})).verdict is Verdict.STATUS
    assert diff_node("n", a, NodeSide("completed", 2, {"x": 1})).verdict is Verdict.SAME
    assert diff_node("n", a, NodeSide("overridden", 1, {"x": 2})).verdict is Verdict.CHANGED
    assert diff_node("n", None, a).verdict is Verdict.ONLY_B
    assert diff_node("n", a, None).verdict is Verdict.ONLY_A


def test_objects_are_compared_key_by_key_recursively() -> None:
    old = {"keep": 1, "gone": "x", "deep": {"v": 1, "w": [1, 2]}, "odd key": True}
    new = {"keep": 1.0, "deep": {"v": 2, "w": [1, 2]}, "odd key": 1, "new": None}
    changes, text_diffs, notes = compare_values(old, new)
    assert changes == [
        Change("$.gone", "removed", old="x"),
        Change("$.deep.v", "changed", 1, 2),
        Change('$["odd key"]', "changed", True, 1),  # true is not 1 in JSON; 1 and 1.0 are one number
        Change("$.new", "added", new=None),
    ]
    assert text_diffs == {}
    assert notes == []


def test_lists_are_compared_by_index_with_a_length_note() -> None:
    changes, _, notes = compare_values({"items": [{"t": "a"}, {"t": "b"}]}, {"items": [{"t": "a"}, {"t": "B"}, 3]})
    assert changes == [Change("$.items[1].t", "changed", "b", "B"), Change("$.items[2]", "added", new=3)]
    assert notes == ["$.items: 2 items → 3 items"]
    changes, _, notes = compare_values([1, 2, 3], [1])
    assert changes == [Change("$[1]", "removed", old=2), Change("$[2]", "removed", old=3)]
    assert notes == ["$: 3 items → 1 items"]


def test_only_long_or_multiline_strings_get_a_text_diff() -> None:
    assert compare_values({"s": "short"}, {"s": "other"})[1] == {}
    long_a, long_b = "word " * 20, "word " * 19 + "change"
    assert "+word word" in compare_values({"s": long_a}, {"s": long_b})[1]["$.s"]
    assert compare_values("a\nb", "a\nc")[1]["$"].splitlines()[-2:] == ["-b", "+c"]


def test_a_container_against_a_scalar_is_one_change() -> None:
    assert compare_values({"v": [1]}, {"v": {"0": 1}})[0] == [Change("$.v", "changed", [1], {"0": 1})]
    assert compare_values(None, None) == ([], {}, [])


def test_schema_annotations_are_stripped_at_any_depth() -> None:
    merged = {"a": {"text": "x", "_schema_id": "text", "_schema_version": "1.0.0"}, "_schema_id": "m"}
    assert strip_meta_deep(merged) == {"a": {"text": "x"}}
    assert strip_meta_deep([{"_schema_version": "1"}]) == [{}]
