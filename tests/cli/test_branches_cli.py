"""A CONDITION whose value selects none of its branches, through the real `plait` command: the
node fails naming the value and the keys (never a `completed` run that skipped everything
after it), unless one edge is the default branch; the default branch is checked by
`plait validate`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.cli.test_corrections_cli import newest, shown
from tests.plait_cli import run_plait


def graph(condition: str, *, default: bool = False, second_default: bool = False) -> dict[str, object]:
    low: dict[str, object] = {"source": "branch", "target": "later", "condition_key": "low"}
    if default:
        low = {"source": "branch", "target": "later", "default": True}
    urgent: dict[str, object] = {"source": "branch", "target": "urgent", "condition_key": "high"}
    if second_default:
        urgent["default"] = True
    return {
        "id": "triage",
        "input_schema": {"type": "object", "properties": {"priority": {"type": "string"}}},
        "nodes": [
            {"id": "extract", "type": "TRANSFORM", "transform_expr": "({priority: input.priority})"},
            {"id": "branch", "type": "CONDITION", "condition_expr": condition},
            {"id": "urgent", "type": "TRANSFORM", "transform_expr": "({says: 'URGENT'})"},
            {"id": "later", "type": "TRANSFORM", "transform_expr": "({says: 'later'})"},
            {"id": "join", "type": "MERGE"},
        ],
        "edges": [
            {"source": "extract", "target": "branch"},
            urgent,
            low,
            {"source": "urgent", "target": "join"},
            {"source": "later", "target": "join"},
            {"source": "join", "target": "END"},
        ],
    }


def write(tmp_path: Path, body: dict[str, object]) -> str:
    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    return "graph.yaml"


def test_a_value_no_branch_takes_fails_the_condition_naming_the_value_and_the_keys(tmp_path: Path) -> None:
    path = write(tmp_path, graph("nodes.extract.priorty"))  # the typo of a new user's session
    done = run_plait("run", path, "-i", "priority=high", "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "failed"
    assert "node 'branch' failed (condition_no_branch)" in done.stderr
    assert "the condition's value \"null\" is none of its branches' keys (high, low)" in done.stderr
    assert "default: true" in done.stderr  # how to make such a value take a branch
    shown = json.loads(run_plait("runs", "show", summary["run_id"], "--json", cwd=tmp_path).stdout)
    statuses = {n["node_id"]: n["status"] for n in shown["nodes"]}
    assert statuses["branch"] == "failed"
    assert "urgent" not in statuses or statuses["urgent"] != "completed"


def test_a_value_no_key_matches_takes_the_default_branch(tmp_path: Path) -> None:
    path = write(tmp_path, graph("nodes.extract.priority", default=True))
    assert run_plait("validate", path, cwd=tmp_path).returncode == 0
    other = run_plait("run", path, "-i", "priority=someday", "--json", cwd=tmp_path)
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout)["output"] == {"later": {"says": "later"}}
    high = run_plait("run", path, "-i", "priority=high", "--json", cwd=tmp_path)
    assert json.loads(high.stdout)["output"] == {"urgent": {"says": "URGENT"}}  # a key still wins


def test_validate_refuses_two_default_branches(tmp_path: Path) -> None:
    path = write(tmp_path, graph("nodes.extract.priority", default=True, second_default=True))
    checked = run_plait("validate", path, "--json", cwd=tmp_path)
    assert checked.returncode != 0
    codes = [d["code"] for d in json.loads(checked.stdout)["errors"]]
    assert "several_default_branches" in codes


def newest_statuses(run_id: str, cwd: Path) -> dict[str, tuple[int, str]]:
    """Each node's newest activation and its status."""
    return {node_id: (n["activation"], n["status"]) for node_id, n in newest(shown(run_id, cwd)).items()}


def test_a_rerun_condition_that_takes_the_other_branch_runs_it_and_drops_the_old_one(tmp_path: Path) -> None:
    path = write(tmp_path, graph("nodes.extract.priority"))
    done = run_plait("run", path, "-i", "priority=high", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    (tmp_path / "low.json").write_text(json.dumps({"priority": "low"}))

    corrected = run_plait("override", run_id, "extract", "--file", "low.json", "--policy", "RERUN", cwd=tmp_path)
    assert corrected.returncode == 0, corrected.stderr
    assert "downstream: branch completed" in corrected.stderr
    assert "later completed" in corrected.stderr
    assert "urgent skipped" in corrected.stderr
    statuses = newest_statuses(run_id, tmp_path)
    assert statuses["later"] == (2, "completed")  # skipped by the first decision, run by the new one
    assert statuses["urgent"] == (2, "skipped")  # off the branch: its output left the run's
    assert statuses["join"] == (2, "completed")  # the new branch reached it: it read `later`, not `urgent`
    run = json.loads(run_plait("runs", "show", run_id, "--json", cwd=tmp_path).stdout)
    assert run["status"] == "completed"
    assert run["output"] == {"later": {"says": "later"}}

    (tmp_path / "high.json").write_text(json.dumps({"priority": "high"}))
    run_plait("override", run_id, "extract", "--file", "high.json", "--policy", "INVALIDATE", cwd=tmp_path)
    assert newest_statuses(run_id, tmp_path)["branch"][1] == "stale"
    again = run_plait("rerun", run_id, "branch", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    statuses = newest_statuses(run_id, tmp_path)
    assert (statuses["urgent"], statuses["later"]) == ((3, "completed"), (3, "skipped"))
    run = json.loads(run_plait("runs", "show", run_id, "--json", cwd=tmp_path).stdout)
    assert run["output"] == {"urgent": {"says": "URGENT"}}


def test_overriding_a_conditions_branch_takes_the_new_branch(tmp_path: Path) -> None:
    path = write(tmp_path, graph("nodes.extract.priority"))
    done = run_plait("run", path, "-i", "priority=high", "--json", cwd=tmp_path)
    run_id = json.loads(done.stdout)["run_id"]
    corrected = run_plait("override", run_id, "branch", "--value", '{"branch": "low"}', cwd=tmp_path)
    assert corrected.returncode == 0, corrected.stderr
    statuses = newest_statuses(run_id, tmp_path)
    assert (statuses["later"], statuses["urgent"], statuses["join"]) == (
        (2, "completed"),
        (2, "skipped"),
        (2, "completed"),
    )
    run = json.loads(run_plait("runs", "show", run_id, "--json", cwd=tmp_path).stdout)
    assert run["output"] == {"later": {"says": "later"}}
    check = run_plait("runs", "check", run_id, cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
