"""A node that runs again waits for what runs again upstream of it: a correction that queues a
CONDITION and a reader further down runs the reader once, on the value the turned branch gives
(never first on the old one, then again, nor left reading an old version)."""

from __future__ import annotations

from pathlib import Path

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
