"""`plait eval run` as a person uses it (real `plait` processes, SQLite and PostgreSQL): the
per-case outcomes and the verdict printed, the exit code the verdict's (0 pass, 1 fail, 3
inconclusive), `--json`, `--dry-run` calling no model, and the evaluation's runs left out of
`plait runs list` unless `--all`."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from plait.store import Store
from tests.plait_cli import bare_env, run_plait
from tests.runs.eval_run_scenario import RULES, calls, graph, judged, new_version


def plait(db_url: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, env=bare_env(PLAIT_DB=db_url, PATH="/usr/bin:/bin", COLUMNS="200"), timeout=180)


def script(tmp_path: Path) -> str:
    path = tmp_path / "answers.yaml"
    path.write_text(yaml.safe_dump({"responses": RULES, "log": "calls.jsonl"}))
    return f"scripted:{path}"


def evaluate(db_url: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return plait(db_url, tmp_path, "eval", "run", "feedback", "--set", "fixes", "--llm", script(tmp_path), *args)


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(done.stdout)


def test_the_verdict_is_printed_and_is_the_exit_code(store: Store, db_url: str, tmp_path: Path) -> None:
    judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    passed = evaluate(db_url, tmp_path, "--min-cases", "2", "--concurrency", "2")
    assert passed.returncode == 0, passed.stderr
    rows = [line for line in passed.stdout.splitlines() if line.startswith("│")]
    assert re.search(r"│ 1 │ corrected │ label │ node\s+│ fail\s+│ pass\s+│ fixed\s+│", rows[0]), rows[0]
    assert re.search(r"│ 3 │ approved\s+│ label │ node\s+│ pass\s+│ pass\s+│ still right │", rows[2]), rows[2]
    assert "verdict: pass (exit 0)" in passed.stdout
    assert "  ok           comparable cases 3 >= 2 required" in passed.stdout
    assert "#1 corrected label: fixed" in passed.stderr
    assert calls(tmp_path / "calls.jsonl") == ["label"] * 3

    inconclusive = evaluate(db_url, tmp_path)  # 10 comparable cases by default
    assert inconclusive.returncode == 3, inconclusive.stderr
    assert "verdict: inconclusive (exit 3)" in inconclusive.stdout

    new_version(store, graph("Label v3: {{ current.text }}"))
    failed = evaluate(db_url, tmp_path, "--min-cases", "1", "--json")
    assert failed.returncode == 1, failed.stderr
    shown = as_json(failed)
    assert (shown["exit_code"], shown["verdict"]["status"], shown["candidate_version"]) == (1, "fail", 3)
    assert [c["outcome"] for c in shown["cases"]] == ["still_wrong", "still_wrong", "regressed"]
    assert shown["cases"][2]["candidate"][0]["output"] == {"label": "question"}
    assert "  fail         regressions 1 > 0 allowed" in shown["verdict"]["lines"]

    # the evaluations' runs are not what people ran
    listed = as_json(plait(db_url, tmp_path, "runs", "list", "--json"))
    every = as_json(plait(db_url, tmp_path, "runs", "list", "--all", "--json"))
    assert (len(listed), len(every)) == (3, 3 + 3 * 3)


def test_a_dry_run_estimates_each_side_and_calls_no_model(store: Store, db_url: str, tmp_path: Path) -> None:
    judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    done = evaluate(db_url, tmp_path, "--dry-run", "--repeat", "2", "--baseline-version", "1", "--json")
    assert done.returncode == 0, done.stderr
    found = as_json(done)
    assert (found["cases"], found["repetitions"]) == (3, 2)
    assert (found["candidate"]["calls"], found["candidate"]["node_level"]) == (6, 3)
    assert found["baseline"]["calls"] == 3
    assert found["candidate"]["tokens_in"] > 0
    assert not (tmp_path / "calls.jsonl").exists()
    assert store.evaluations.evaluations() == []  # nothing started
    text = evaluate(db_url, tmp_path, "--dry-run")
    assert "candidate (version 2): 3 calls" in text.stdout
    assert "baseline: the recorded outputs (no call)" in text.stdout


def test_a_bad_request_exits_2_in_the_command_lines_words(store: Store, db_url: str, tmp_path: Path) -> None:
    judged(store)
    done = evaluate(db_url, tmp_path, "--version", "5", "--json")
    assert done.returncode == 2
    assert "graph 'feedback' has no version 5 to use as the candidate" in done.stderr
    assert as_json(done)["error"]["code"] == "not_found"
    alpha = evaluate(db_url, tmp_path, "--alpha", "0")
    assert alpha.returncode == 2
    assert "gate rule alpha is 0.0" in alpha.stderr
    none_at_once = evaluate(db_url, tmp_path, "--concurrency", "0")
    assert none_at_once.returncode == 2
    assert "--concurrency" in none_at_once.stderr
