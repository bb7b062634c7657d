"""`plait replay NODE_RUN_ID`: the recorded request re-sent exactly, the answers compared."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from plait.llm import local
from plait.store import Store
from tests.plait_cli import run_plait

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, timeout=120)


def run_triage(tmp_path: Path, *llm: str) -> dict[str, str]:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    inputs = EXAMPLES / "inputs" / "feedback_triage.yaml"
    result = plait("run", str(EXAMPLES / "feedback_triage.yaml"), "--input-file", str(inputs), *llm, "--db", db,
                   "--quiet", "--json", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    with Store(db) as store:
        return {n.node_id: n.id for n in store.runs.node_runs(json.loads(result.stdout)["run_id"])}


def test_replay_sends_the_recorded_prompt_and_diffs_the_answers(tmp_path: Path) -> None:
    ids = run_triage(tmp_path, "--llm", f"scripted:{EXAMPLES / 'scripted' / 'feedback_triage.yaml'}")
    other = tmp_path / "other.yaml"
    other.write_text(
        "log: calls.jsonl\nresponses:\n  - node: file_bug\n    match: 'Feedback: The app crashes'\n"
        "    output: {title: Upload crash, severity: medium}\n"
    )
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    result = plait("replay", ids["file_bug"], "--llm", f"scripted:{other}", "--db", db, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["stored"] == {"title": "Crash when uploading photos over 10 MB", "severity": "high"}
    assert report["new"] == {"title": "Upload crash", "severity": "medium"}
    assert '-  "severity": "high"' in report["diff"]
    assert '+  "severity": "medium"' in report["diff"]
    assert report["violations"] == []
    assert len((tmp_path / "calls.jsonl").read_text().splitlines()) == 1  # the rule matched the recorded prompt
    human = plait("replay", ids["file_bug"], "--llm", f"scripted:{other}", "--db", db, cwd=tmp_path)
    assert human.returncode == 0
    assert "replayed on scripted/scripted" in human.stdout


def test_replay_refuses_what_was_not_a_model_call(tmp_path: Path) -> None:
    ids = run_triage(tmp_path, "--llm", f"scripted:{EXAMPLES / 'scripted' / 'feedback_triage.yaml'}")
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    script = f"scripted:{EXAMPLES / 'scripted' / 'feedback_triage.yaml'}"
    transform = plait("replay", ids["summarize"], "--llm", script, "--db", db, cwd=tmp_path)
    assert transform.returncode == 2
    assert "is not a recorded model call" in transform.stderr
    missing = plait("replay", "no-such-id", "--llm", script, "--db", db, cwd=tmp_path)
    assert missing.returncode == 2
    assert "no node run 'no-such-id'" in missing.stderr


@pytest.mark.skipif(not local.available(), reason="the `local` extra is not installed: " + local.INSTALL_HINT)
def test_replay_on_the_embedded_model_gives_the_same_answer(tmp_path: Path) -> None:
    ids = run_triage(tmp_path, "--llm", "local")
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    result = plait("replay", ids["classify"], "--llm", "local", "--db", db, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["new"] == report["stored"]
    assert report["diff"] == ""
    assert report["tokens_output"] > 0


def test_replay_without_a_model_option_asks_the_model_the_run_used(tmp_path: Path) -> None:
    ids = run_triage(tmp_path, "--llm", f"scripted:{EXAMPLES / 'scripted' / 'feedback_triage.yaml'}")
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    result = plait("replay", ids["file_bug"], "--db", db, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["provider"] == "scripted"  # the run's own model, not this machine's default
    assert report["new"] == report["stored"]  # the same script answers the same prompt the same way
