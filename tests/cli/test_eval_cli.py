"""`plait eval build | show` as a person uses them (real `plait` processes, SQLite and PostgreSQL):
a set built from a judged graph, built again as its next revision, filtered, listed and shown
with each case's label, source, judge and change; usage errors and nothing to build exit 2 in the
command line's words."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from plait.store import Store
from tests.plait_cli import bare_env, run_plait
from tests.runs.eval_scenario import judged_graph


def plait(db_url: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, env=bare_env(PLAIT_DB=db_url, PATH="/usr/bin:/bin", COLUMNS="200"), timeout=120)


def ok(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip().startswith(("{", "[")) else done.stdout


def test_a_set_is_built_built_again_listed_and_shown(store: Store, db_url: str, tmp_path: Path) -> None:
    judged = judged_graph(store, tmp_path)
    built = plait(db_url, tmp_path, "eval", "build", "triage", "--name", "triage")
    assert ok(built).strip() == "triage@1: 6 cases (4 corrected, 2 approved) from 5 runs"
    assert "skipped 1 whose expected value fails its schemas" in built.stderr
    assert "'unsure' is not one of" in built.stderr
    assert "plait eval show triage triage@1" in built.stderr
    again = ok(plait(db_url, tmp_path, "eval", "build", "triage", "--name", "triage", "--from", "approvals",
                     "--nodes", "classify", "--since", "1d", "--json"))  # fmt: skip
    assert (again["ref"], again["cases"], again["built_from"]["sources"]) == ("triage@2", 2, ["approvals"])
    assert again["built_from"]["nodes"] == ["classify"]
    listed = ok(plait(db_url, tmp_path, "eval", "show", "triage", "--json"))
    assert [(s["ref"], s["cases"]) for s in listed] == [("triage@2", 2), ("triage@1", 6)]
    table = ok(plait(db_url, tmp_path, "eval", "show", "triage"))
    assert re.search(r"triage@1\s+│ 6\s+│ 4\s+│ 2\s+│ 1\s+│ node", table), table
    shown = plait(db_url, tmp_path, "eval", "show", "triage", "triage@1")
    assert "triage@1 of triage: 6 cases at node level from corrections and approvals" in shown.stderr
    rows = [line for line in ok(shown).splitlines() if line.startswith("│")]
    assert len(rows) == 6
    r1 = judged.runs["r1"][:8]
    assert re.search(rf"│ 6 │ node\s+│ corrected │ {r1} │ finish\s+│ ann\s+│ [\d-]+ [\d:]+ │ worse than that\s+│ "
                     r'label: "bug" → "critical bug"', rows[5]), rows[5]  # fmt: skip
    assert re.search(rf"│ 1 │ node\s+│ approved\s+│ {r1} │ classify │ ann .*│ approved in review\s+│ \(as produced\)",
                     rows[0]), rows[0]  # fmt: skip
    one = ok(plait(db_url, tmp_path, "eval", "show", "triage", "triage", "--json"))
    assert one["set"]["ref"] == "triage@2"  # the newest revision unless @REV
    assert [c["label"] for c in one["cases"]] == ["approved", "approved"]
    first = ok(plait(db_url, tmp_path, "eval", "show", "triage", "triage@1", "--json"))
    assert first["cases"][1]["diff"] == 'label: "question" → "bug"'
    assert first["cases"][1]["input"] == {"input": {"text": "how do I export?"}, "upstream": {}, "read": {"input": 1}}
    runs = ok(plait(db_url, tmp_path, "eval", "build", "triage", "--name", "runs", "--level", "run", "--json"))
    assert (runs["cases"], runs["built_from"]["level"]) == (1, "run")


def test_bad_usage_and_nothing_to_build_exit_2_in_the_command_lines_words(
    store: Store, db_url: str, tmp_path: Path
) -> None:
    judged_graph(store, tmp_path)
    cases = {
        ("eval", "build", "nowhere", "--name", "x"): "no graph 'nowhere'",
        ("eval", "build", "triage", "--name", "x", "--from", "guesses"): "--from 'guesses' is not a list of",
        ("eval", "build", "triage", "--name", "x", "--from", ""): "--from '' is not a list of",
        ("eval", "build", "triage", "--name", "Bad Name"): "--name 'Bad Name' is not a set name",
        ("eval", "build", "triage", "--name", "x", "--level", "graph"): "--level 'graph' is not one of node, run",
        ("eval", "build", "triage", "--name", "x", "--since", "soon"): "--since 'soon' is neither a date nor",
        ("eval", "build", "triage", "--name", "x", "--nodes", "nope"): "graph 'triage' has no node 'nope'",
        ("eval", "build", "triage", "--name", "x", "--since", "2999-01-01"): "has no corrections or approvals since",
        ("eval", "show", "triage", "missing"): "no evaluation set 'missing'",
        ("eval", "show", "triage", "x@y"): "'x@y' is not NAME or NAME@REV",
        ("eval", "show", "nowhere"): "no graph 'nowhere'",
    }
    for args, message in cases.items():
        done = plait(db_url, tmp_path, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    nothing = plait(db_url, tmp_path, "eval", "build", "triage", "--name", "x", "--since", "2999-01-01", "--json")
    error = json.loads(nothing.stdout)["error"]
    assert error["code"] == "eval_build"
    assert "plait review RUN NODE --approve" in error["hint"]
    assert ok(plait(db_url, tmp_path, "eval", "show", "triage", "--json")) == []
    assert "build one: plait eval build triage --name NAME" in plait(db_url, tmp_path, "eval", "show", "triage").stderr
