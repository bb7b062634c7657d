"""Crash safety (SPEC §3, §15): kill a real `plait run` process, resume, and compare with an uninterrupted run.

Invariants checked after every scenario:
- the final output equals the output of a run that was never interrupted;
- no node was called again after its result was committed (scripted call log vs completed_at);
- every node has exactly one committed node run.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.store import Store

CHAIN = 4
DELAY_MS = 200


def write_case(tmp_path: Path) -> tuple[Path, Path]:
    nodes: list[dict[str, Any]] = [
        {"id": f"n{i}", "type": "LLM_CALL", "user_prompt_tpl": f"step {i} after " + "{{ current.text }}"}
        for i in range(CHAIN)
    ]
    nodes.append({"id": "final", "type": "TRANSFORM", "transform_expr": "({text: current.text + '!'})"})
    edges = [{"source": f"n{i}", "target": f"n{i + 1}", "schema_id": "text"} for i in range(CHAIN - 1)]
    edges.append({"source": f"n{CHAIN - 1}", "target": "final", "schema_id": "text"})
    edges.append({"source": "final", "target": "END", "schema_id": "text"})
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    graph = {
        "id": "crash_chain",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "schemas": [{"id": "text", "schema": schema}],
        "nodes": nodes,
        "edges": edges,
    }
    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(graph, sort_keys=False))
    responses = [{"node": f"n{i}", "output": {"text": f"out{i}"}, "delay_ms": DELAY_MS} for i in range(CHAIN)]
    (tmp_path / "script.yaml").write_text(yaml.safe_dump({"responses": responses, "log": "calls.jsonl"}))
    return tmp_path / "graph.yaml", tmp_path / "script.yaml"


def plait(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "plait", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def run_ids(db: str) -> list[str]:
    with Store(db) as store:
        return [r.id for r in store.runs.list()]


def show(db: str, run_id: str) -> dict[str, Any]:
    """What `plait runs show --json` prints (tests/cli covers the command itself)."""
    with Store(db) as store:
        run = store.runs.get(run_id)
        nodes = [
            {"node_id": n.node_id, "status": str(n.status), "completed_at": n.completed_at}
            for n in store.runs.node_runs(run_id)
        ]
    return {"status": str(run.status), "output": run.output, "nodes": nodes}


def assert_invariants(tmp_path: Path, db: str, run_id: str) -> None:
    detail = show(db, run_id)
    assert detail["status"] == "completed", detail
    assert detail["output"] == {"text": f"out{CHAIN - 1}!"}
    completed = {n["node_id"]: n for n in detail["nodes"] if n["status"] == "completed"}
    assert sorted(completed) == sorted([f"n{i}" for i in range(CHAIN)] + ["final"])
    assert len(detail["nodes"]) == CHAIN + 1  # one committed node run per node, no duplicates
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    for call in calls:
        committed_at = completed[call["node"]]["completed_at"]
        assert call["at"] <= committed_at, f"{call['node']} was called again after it completed"


def test_clean_run_matches_the_expected_output(db_url: str, tmp_path: Path) -> None:
    graph, script = write_case(tmp_path)
    proc = plait(["run", str(graph), "-i", "text=go", "--db", db_url, "--llm", f"scripted:{script}", "--quiet"])
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out) == {"text": f"out{CHAIN - 1}!"}


@pytest.mark.parametrize("failpoint", ["before_commit:n2", "after_commit:n2", "before_commit:final"])
def test_kill_at_a_commit_then_resume(db_url: str, tmp_path: Path, failpoint: str) -> None:
    graph, script = write_case(tmp_path)
    proc = plait(
        ["run", str(graph), "-i", "text=go", "--db", db_url, "--llm", f"scripted:{script}", "--quiet"],
        env={"PLAIT_FAILPOINTS": failpoint},
    )
    proc.communicate(timeout=60)
    assert proc.returncode == 137
    (run_id,) = run_ids(db_url)
    node = failpoint.split(":")[1]
    before = {n["node_id"]: n["status"] for n in show(db_url, run_id)["nodes"]}
    assert (before.get(node) == "completed") == failpoint.startswith("after_commit")
    resumed = plait(["resume", run_id, "--db", db_url, "--llm", f"scripted:{script}", "--quiet"])
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert json.loads(out) == {"text": f"out{CHAIN - 1}!"}
    assert_invariants(tmp_path, db_url, run_id)


def test_sigkill_at_random_moments_then_resume_until_done(db_url: str, tmp_path: Path) -> None:
    graph, script = write_case(tmp_path)
    rng = random.Random(7)
    llm = f"scripted:{script}"
    proc = plait(["run", str(graph), "-i", "text=go", "--db", db_url, "--llm", llm, "--quiet"])
    kills = 0
    for _ in range(6):
        time.sleep(rng.uniform(0.3, 0.8))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        kills += 1
        ids = run_ids(db_url)
        if not ids:  # killed before the run row existed: start again
            proc = plait(["run", str(graph), "-i", "text=go", "--db", db_url, "--llm", llm, "--quiet"])
            continue
        proc = plait(["resume", ids[0], "--db", db_url, "--llm", llm, "--quiet"])
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert kills >= 2, "the run finished before it could be killed twice; lengthen DELAY_MS"
    (run_id,) = run_ids(db_url)
    assert_invariants(tmp_path, db_url, run_id)


def test_two_engines_on_one_run_never_execute_a_node_twice(db_url: str, tmp_path: Path) -> None:
    graph, script = write_case(tmp_path)
    llm = f"scripted:{script}"
    first = plait(["run", str(graph), "-i", "text=go", "--db", db_url, "--llm", llm, "--quiet"])
    deadline = time.time() + 20
    while not run_ids(db_url) and time.time() < deadline:
        time.sleep(0.05)
    (run_id,) = run_ids(db_url)
    second = plait(["resume", run_id, "--db", db_url, "--llm", llm, "--quiet"])
    _, second_err = second.communicate(timeout=60)
    _out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert second.returncode in (0, 2), second_err
    if second.returncode == 2:
        assert "being executed by another process" in second_err
    assert_invariants(tmp_path, db_url, run_id)
    calls = [json.loads(line)["node"] for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert sorted(calls) == sorted(f"n{i}" for i in range(CHAIN))
