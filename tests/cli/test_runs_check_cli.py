"""`plait runs check` as a user runs it: real processes on a real SQLite file, the scripted
provider. Runs are made inconsistent the only ways they can be: by corrections (a KEEP policy, a
CONDITION switched to another branch) or by writing to the store directly, past the corrections'
checks (a ledger version nobody marked the readers of)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from plait.store import Store, current_activations
from plait.store.corrections import Change, CorrectionWriter, Queue, Reopen, SetOverride
from plait.store.writes import Version
from tests.cli.test_corrections_cli import newest, only_run, shown
from tests.cli.test_run_cli import example_args, plait

pytestmark = pytest.mark.usefixtures("folder_store")  # the tests open the folder's store


def checked(run_id: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`plait runs check RUN --json`: the process and the report it printed."""
    done = plait("runs", "check", run_id, "--json", cwd=cwd)
    return done, dict(json.loads(done.stdout))


def problems(report: dict[str, Any]) -> set[tuple[str, str | None]]:
    return {(p["kind"], p["node_id"]) for p in report["problems"]}


def write(cwd: Path, run_id: str, changes: Sequence[Change]) -> None:
    """Commit `changes` to the run straight through the store (one transaction under the run's
    lease), as no correction would: nothing else is marked or queued with them."""
    store = Store(f"sqlite:///{cwd / '.plait' / 'plait.db'}")
    try:
        assert store.runs.acquire_lease(run_id, "test", 30)
        try:
            CorrectionWriter(store.db).apply(run_id, "test", changes)
        finally:
            store.runs.release_lease(run_id, "test")
    finally:
        store.close()


def record(cwd: Path, run_id: str, node_id: str) -> Any:
    """The newest activation of `node_id`, and its ledger head, read from the store."""
    with Store(f"sqlite:///{cwd / '.plait' / 'plait.db'}") as store:
        return current_activations(store.runs.node_runs(run_id))[node_id], store.ledger.heads(run_id)[node_id]


def test_a_completed_run_is_consistent(tmp_path: Path) -> None:
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    text = plait("runs", "check", run_id[:8], cwd=tmp_path)  # a prefix names the run, as everywhere
    assert text.returncode == 0, text.stderr
    assert text.stdout.strip() == "consistent: 7 node runs checked"
    done, report = checked(run_id, tmp_path)
    assert done.returncode == 0
    assert report == {"run_id": run_id, "consistent": True, "checked": 7, "problems": []}


def test_a_ledger_version_nobody_marked_the_readers_of_is_reported(tmp_path: Path) -> None:
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    rec, head = record(tmp_path, run_id, "file_bug")
    value = {"title": "Another title", "severity": "low"}
    write(tmp_path, run_id, [Version(run_id, "file_bug", head.version + 1, "override", "test", {}, rec.id, value)])

    done, report = checked(run_id, tmp_path)
    assert done.returncode == 1, done.stderr
    assert report["consistent"] is False
    # join read version 1 of file_bug and is not stale; the ledger's file_bug is not file_bug's output
    assert problems(report) == {("stale_read_not_marked", "join"), ("ledger_mismatch", "file_bug")}
    join = next(p for p in report["problems"] if p["node_id"] == "join")
    nodes = newest(shown(run_id, tmp_path))
    assert (join["node_run_id"], join["activation"], join["run_id"]) == (nodes["join"]["id"], 1, run_id)
    assert "join read file_bug at version 1" in join["message"]
    assert f"`plait rerun {run_id} join`" in join["hint"]

    text = plait("runs", "check", run_id, cwd=tmp_path)
    assert text.returncode == 1
    assert text.stdout.startswith("inconsistent: 2 problems in 7 node runs checked\n")
    assert f"- join: stale_read_not_marked (node run {nodes['join']['id']}, activation 1)" in text.stdout
    assert f"hint: run it again on the values in effect: `plait rerun {run_id} join`" in text.stdout


def test_an_override_that_invalidates_leaves_the_run_consistent(tmp_path: Path) -> None:
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    corrected = tmp_path / "bug.json"
    corrected.write_text(json.dumps({"title": "Photo uploads over 10 MB crash", "severity": "high"}))
    override = plait("override", run_id, "file_bug", "--file", str(corrected), "--policy", "INVALIDATE", cwd=tmp_path)
    assert override.returncode == 0, override.stderr
    assert newest(shown(run_id, tmp_path))["join"]["status"] == "stale"  # its reader is marked

    done, report = checked(run_id, tmp_path)
    assert done.returncode == 0, done.stdout
    assert (report["consistent"], report["problems"]) == (True, [])


def test_readers_a_keep_correction_left_as_they_are_are_consistent(tmp_path: Path) -> None:
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    value = '{"title": "Photo uploads over 10 MB crash", "severity": "high"}'
    assert plait("override", run_id, "file_bug", "--value", value, "--policy", "KEEP", cwd=tmp_path).returncode == 0
    assert newest(shown(run_id, tmp_path))["join"]["status"] == "completed"  # it read the old value, and keeps it

    done, report = checked(run_id, tmp_path)
    assert done.returncode == 0, report  # a person chose to keep it: the correction's promise is kept

    _, head = record(tmp_path, run_id, "file_bug")  # a change past the corrections: no policy kept join
    again = {"title": "Yet another title", "severity": "low"}
    write(tmp_path, run_id, [Version(run_id, "file_bug", head.version + 1, "rollback", "test", {}, None, again)])
    done, report = checked(run_id, tmp_path)
    assert done.returncode == 1
    assert ("stale_read_not_marked", "join") in problems(report)


def test_a_condition_switched_to_another_branch_settles_its_branches_and_checks_clean(tmp_path: Path) -> None:
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    assert plait("override", run_id, "route", "--value", '{"branch": "praise"}', cwd=tmp_path).returncode == 0

    done, report = checked(run_id, tmp_path)  # the branch taken now ran, the one left is skipped
    assert done.returncode == 0, report
    nodes = newest(shown(run_id, tmp_path))
    assert (nodes["file_bug"]["status"], nodes["thank"]["status"]) == ("skipped", "completed")
    assert shown(run_id, tmp_path)["output"]["action"] == "thanked"


def test_child_runs_are_checked_with_their_parent(tmp_path: Path) -> None:
    assert plait("run", *example_args("video_clips"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    done, report = checked(run_id, tmp_path)
    assert (done.returncode, report["checked"]) == (0, 9)  # 3 nodes, and 2 in each of the 3 MAP children

    children = json.loads(plait("runs", "list", "--children", "--json", cwd=tmp_path).stdout)
    child = next(r["id"] for r in children if r["parent_run_id"] == run_id and r["child_key"] == 1)
    pick = '{"at_sec": 40, "reason": "Better"}'
    assert plait("override", child, "pick", "--value", pick, "--policy", "RERUN", cwd=tmp_path).returncode == 0
    assert checked(run_id, tmp_path)[0].returncode == 0  # the child reran, its parent's MAP gathered it again

    rec, _ = record(tmp_path, child, "label")  # the child's exit node corrected past its run's output
    write(tmp_path, child, [SetOverride(rec.id, {"chapter": "X", "at_sec": 1, "reason": "r"}, "test", None, "KEEP")])
    done, report = checked(run_id, tmp_path)
    assert done.returncode == 1
    # the child's output is not its exit node's now, and its ledger has no version of the value
    assert {(p["kind"], p["run_id"], p["node_id"]) for p in report["problems"]} == {
        ("output_mismatch", child, "label"),
        ("ledger_mismatch", child, "label"),
    }
    text = plait("runs", "check", run_id, cwd=tmp_path).stdout
    assert f"- child run {child}, label: output_mismatch" in text


def test_a_run_left_with_queued_work_has_not_settled(tmp_path: Path) -> None:
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    write(tmp_path, run_id, [Queue("summarize", 2), Reopen()])  # a rerun whose execution never came

    done, report = checked(run_id, tmp_path)
    assert done.returncode == 1
    (problem,) = report["problems"]
    assert (problem["kind"], problem["node_id"]) == ("not_settled", None)
    assert "summarize is queued to run" in problem["message"]
    assert f"`plait resume {run_id}`" in problem["hint"]
    assert plait("resume", run_id, cwd=tmp_path).returncode == 0
    assert checked(run_id, tmp_path)[0].returncode == 0


def test_an_unknown_run_exits_2(tmp_path: Path) -> None:
    done = plait("runs", "check", "no-such-run", "--json", cwd=tmp_path)
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "not_found"
