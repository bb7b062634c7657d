"""A node that runs again waits for what runs again upstream of it: a correction that queues a
CONDITION and a reader further down runs the reader once, on the value the turned branch gives
(never first on the old one, then again, nor left reading an old version)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from plait.client import Client

TRIAGE = "examples/feedback_triage.yaml"
ROOT = Path(__file__).resolve().parents[2]
ANSWERS = f"scripted:{ROOT / 'examples/scripted/feedback_triage.yaml'}"


def test_a_reader_queued_below_a_rerun_condition_runs_once_after_the_new_branch(tmp_path: Path) -> None:
    with Client(tmp_path / "p.db", llm=ANSWERS) as client:
        first = client.run(ROOT / TRIAGE, {"feedback": "How do I export my data?"})
        assert first.output == {"label": "question", "action": "answered"}
        corrected = client.override(first.run_id, "classify", {"label": "bug"}, policy="RERUN")
        # summarize reads classify directly and the join below the CONDITION: both run again
        assert corrected.queued == ["route", "summarize"]
        assert corrected.result is not None
        assert corrected.result.output is not None
        assert corrected.result.output["label"] == "bug"
        view = client.get_run(first.run_id)
        summaries = [r for r in view.nodes if r.node_id == "summarize"]
        assert [r.activation for r in summaries] == [1, 2], "summarize ran before the join it reads was new"
        joins = [r.activation for r in view.nodes if r.node_id == "join"]
        assert summaries[-1].consumed is not None
        assert summaries[-1].consumed["join"] == 2 == len(joins)
        assert client.check(first.run_id).consistent


# `d` names `b`, but the only path from `b` to `d` runs through `x`. A RERUN correction of `a`
# queues `b` and `d` (its readers) and marks `x` stale (it follows `b`): a stale value is still a
# value, so no in-edge of `d` makes it wait for `b`, and `b` is not its predecessor either.
BEHIND_A_STALE_NODE = {
    "plait": 1,
    "id": "behind_a_stale_node",
    "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    "nodes": [
        {"id": "a", "type": "TRANSFORM", "transform_expr": "({n: input.n})"},
        {"id": "b", "type": "TRANSFORM", "transform_expr": "({n: nodes.a.n * 10})"},
        {"id": "x", "type": "TRANSFORM", "transform_expr": "({n: 0})"},
        {"id": "d", "type": "TRANSFORM", "transform_expr": "({a: nodes.a.n, b: nodes.b.n})"},
    ],
    "edges": [
        {"source": "a", "target": "b"},
        {"source": "b", "target": "x"},
        {"source": "x", "target": "d"},
        {"source": "a", "target": "d"},
        {"source": "d", "target": "END"},
    ],
}


def test_a_reader_waits_for_a_named_node_it_reaches_only_through_a_stale_one(tmp_path: Path) -> None:
    graph = tmp_path / "graph.yaml"
    graph.write_text(yaml.safe_dump(BEHIND_A_STALE_NODE))
    with Client(tmp_path / "p.db") as client:
        first = client.run(graph, {"n": 1})
        assert first.output == {"a": 1, "b": 10}
        corrected = client.override(first.run_id, "a", {"n": 2}, policy="RERUN")
        assert sorted(corrected.queued) == ["b", "d"]
        assert corrected.result is not None
        assert corrected.result.output == {"a": 2, "b": 20}, "d read b's value before b ran again"
        view = client.get_run(first.run_id)
        last = [r for r in view.nodes if r.node_id == "d"][-1]
        assert last.consumed is not None
        assert last.consumed["b"] == 2
        assert client.check(first.run_id).consistent


def test_a_node_the_engine_never_decides_fails_the_run_instead_of_completing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's last guard: were a node held back for ever (a waiting rule that never lets
    go), the run ends failed with kind `internal`, not completed without that node's output."""
    from plait.engine.state import RunState

    graph = tmp_path / "graph.yaml"
    graph.write_text(yaml.safe_dump(BEHIND_A_STALE_NODE))
    monkeypatch.setattr(RunState, "must_wait", lambda self, node_id: node_id == "d")
    with Client(tmp_path / "p.db") as client:
        result = client.run(graph, {"n": 1})
    assert result.status == "failed"
    assert result.error is not None
    assert (result.error["kind"], result.error["node_id"]) == ("internal", "d")
    assert "'d' neither run nor skipped" in result.error["message"]
