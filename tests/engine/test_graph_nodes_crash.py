"""Kill a real `plait run` inside a MAP and inside a LOOP, resume it, and check that no finished
item or iteration ran again, that every child node ran to one committed node run, and that the
output is the uninterrupted run's. On SQLite and PostgreSQL (`db_url`)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.store import Store
from tests.plait_cli import run_plait

ITEMS = 6


def write_graph(tmp_path: Path, node: dict[str, Any]) -> Path:
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump({"plait": 1, "id": f"crash_{node['type'].lower()}", "nodes": [node], "edges": []}))
    return path


def body(step: str) -> dict[str, Any]:
    return {
        "nodes": [
            {"id": "pause", "type": "WAIT", "delay_s": 0.05},
            {"id": "step", "type": "TRANSFORM", "transform_expr": step},
        ],
        "edges": [{"source": "pause", "target": "step"}],
    }


MAP = {
    "id": "each",
    "type": "MAP",
    "items": "input.values",
    "inputs": {"n": "{{ item }}"},
    "max_concurrency": 2,
    "body": body("({n: input.n * 10})"),
}
LOOP = {
    "id": "again",
    "type": "LOOP",
    "while_expr": "last === null || last.n < 5",
    "body": body("({n: (input.loop.previous ? input.loop.previous.n : 0) + 1})"),
}
CASES = {
    "MAP": (MAP, {"values": list(range(ITEMS))}, [n * 10 for n in range(ITEMS)]),
    "LOOP": (LOOP, {}, None),
}


def plait(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, env={**os.environ, **(env or {})}, timeout=120)


def finished_child_nodes(db: str, run_id: str) -> dict[str, float | None]:
    """Every completed node run of the run's children: id -> completed_at."""
    with Store(db) as store:
        children = [r for r in store.runs.list(children=True, limit=1000) if r.parent_run_id == run_id]
        return {
            n.id: n.completed_at
            for child in children
            for n in store.runs.node_runs(child.id)
            if str(n.status) == "completed"
        }


@pytest.mark.parametrize("kind", ["MAP", "LOOP"])
@pytest.mark.parametrize("point", ["after_commit:step#3", "before_commit:step#3"])
def test_kill_inside_then_resume_reruns_nothing_finished(db_url: str, tmp_path: Path, kind: str, point: str) -> None:
    node, run_input, values = CASES[kind]
    graph = write_graph(tmp_path, node)
    (tmp_path / "input.json").write_text(json.dumps(run_input))
    args = ["run", str(graph), "--input-file", str(tmp_path / "input.json"), "--db", db_url, "--quiet"]
    killed = plait(args, env={"PLAIT_FAILPOINTS": point})
    assert killed.returncode == 137, killed.stderr
    with Store(db_url) as store:
        (run,) = store.runs.list()
    before = finished_child_nodes(db_url, run.id)
    assert len(before) >= 4  # two or more children had finished their nodes

    resumed = plait(["resume", run.id, "--db", db_url, "--quiet"])
    assert resumed.returncode == 0, resumed.stderr
    expected = [{"n": v} for v in values] if values is not None else {"n": 5}
    assert json.loads(resumed.stdout) == expected

    after = finished_child_nodes(db_url, run.id)
    assert {k: after[k] for k in before} == before  # nothing that had finished ran again
    with Store(db_url) as store:
        children = [r for r in store.runs.list(children=True, limit=1000) if r.parent_run_id == run.id]
        assert sorted(c.child_key for c in children) == list(range(ITEMS if kind == "MAP" else 5))
        for child in children:
            assert str(child.status) == "completed"
            node_runs = store.runs.node_runs(child.id)
            assert sorted(n.node_id for n in node_runs) == ["pause", "step"]  # one node run per node
