"""`plait rollback --cascade`: what was built from the replaced value runs again on the
restored one, and what follows it, instead of being left stale."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_corrections_cli import newest, shown
from tests.cli.test_expression_lineage_cli import correct_extract, graph, run_graph
from tests.cli.test_run_cli import plait

REPORT = {"type": "TRANSFORM", "transform_expr": "({first: nodes.extract.items[0], n: current.n})"}


def corrected_run(tmp_path: Path) -> str:
    """A run whose `extract` was corrected (version 2) and whose readers ran on the correction."""
    run_id = run_graph(tmp_path, graph(REPORT))
    assert correct_extract(tmp_path, run_id, "RERUN_ALL").returncode == 0
    nodes = newest(shown(run_id, tmp_path))
    assert nodes["report"]["output"] == {"first": "x", "n": 2}
    return run_id


def test_rollback_with_cascade_runs_the_dependents_again_on_the_restored_value(tmp_path: Path) -> None:
    run_id = corrected_run(tmp_path)
    done = plait("rollback", run_id, "extract", "--to-version", "1", "--cascade", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "stale now" not in done.stderr
    assert "downstream: mid completed, report completed" in done.stderr
    nodes = newest(shown(run_id, tmp_path))
    assert (nodes["mid"]["status"], nodes["report"]["status"]) == ("completed", "completed")
    assert (nodes["mid"]["activation"], nodes["report"]["activation"]) == (3, 3)
    assert nodes["report"]["output"] == {"first": "a", "n": 3}
    assert shown(run_id, tmp_path)["output"] == {"first": "a", "n": 3}


def test_rollback_without_cascade_leaves_the_dependents_stale(tmp_path: Path) -> None:
    run_id = corrected_run(tmp_path)
    done = plait("rollback", run_id, "extract", "--to-version", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "stale now: mid, report" in done.stderr
    nodes = newest(shown(run_id, tmp_path))
    assert (nodes["mid"]["status"], nodes["report"]["status"]) == ("stale", "stale")


def test_a_correction_that_drives_the_run_prints_one_json_document(tmp_path: Path) -> None:
    run_id = corrected_run(tmp_path)
    done = plait("rollback", run_id, "extract", "--to-version", "1", "--cascade", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # one document: the run's summary, not the value and then the summary
    assert summary["run_id"] == run_id
    assert summary["status"] == "completed"
