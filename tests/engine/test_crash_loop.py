"""A node that takes its process down is not executed again for ever: after two executions lost
with their process, an automatic continuation (a server's start-up, a worker's reaper) fails the
node with kind `internal` instead, while a person's `plait resume` still executes it. Real
`plait` processes killed at a failpoint, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from plait.engine.runner import Engine
from plait.store import Store
from tests.plait_cli import run_plait

GRAPH = """
plait: 1
id: crashing
nodes:
  - {id: boom, type: TRANSFORM, transform_expr: "({n: 1})"}
  - {id: after, type: TRANSFORM, transform_expr: "({n: current.n + 1})"}
edges:
  - {source: boom, target: after}
"""
KILL = {"PLAIT_FAILPOINTS": "execute:boom"}
"""The process dies (like SIGKILL) each time it starts executing `boom`."""


def plait(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, "--quiet", env={**os.environ, **(env or {})}, timeout=120)


def test_a_node_lost_twice_fails_automatically_but_a_person_can_insist(db_url: str, tmp_path: Path) -> None:
    graph = tmp_path / "graph.yaml"
    graph.write_text(GRAPH)
    assert plait("run", str(graph), "--db", db_url, env=KILL).returncode == 137
    with Store(db_url) as store:
        (run,) = store.runs.list()
    for lost in (1, 2):  # a person resumes twice; the second time the node had been lost twice already
        resumed = plait("resume", run.id, "--db", db_url, env=KILL)
        assert resumed.returncode == 137, resumed.stderr  # it executed the node (and died again)
        with Store(db_url) as store:
            (boom,) = [n for n in store.runs.node_runs(run.id) if n.node_id == "boom"]
        assert (boom.status, boom.lost) == ("running", lost)

    with Store(db_url) as store:  # what a server's start-up or a worker does: continue it automatically
        outcome = asyncio.run(Engine(store).run(run.id))
        nodes = {n.node_id: n for n in store.runs.node_runs(run.id)}
    assert outcome.status == "failed"
    assert (outcome.error or {}).get("node_id") == "boom"
    error = nodes["boom"].error or {}
    assert (nodes["boom"].status, error.get("kind"), error.get("lost")) == ("failed", "internal", 3)
    assert "went down, 3 times" in error["message"], error
    assert f"plait rerun {run.id} boom" in error["message"], error
    assert "after" not in nodes  # nothing downstream ran

    rerun = plait("rerun", run.id, "boom", "--db", db_url)  # and a person can still execute it by hand
    assert rerun.returncode == 0, rerun.stderr
    with Store(db_url) as store:
        assert store.runs.get(run.id).output == {"n": 2}


def test_a_person_resuming_from_python_insists_as_plait_resume_does(db_url: str, tmp_path: Path) -> None:
    from plait.client import Client

    graph = tmp_path / "graph.yaml"
    graph.write_text(GRAPH)
    assert plait("run", str(graph), "--db", db_url, env=KILL).returncode == 137
    with Store(db_url) as store:
        (run,) = store.runs.list()
    for _ in range(2):
        assert plait("resume", run.id, "--db", db_url, env=KILL).returncode == 137
    with Client(db_url) as client:  # lost twice: an automatic continuation would fail it
        result = client.resume(run.id)
    assert result.status == "completed", result.failure
    assert result.output == {"n": 2}
