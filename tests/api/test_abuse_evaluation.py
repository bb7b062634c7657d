"""Hostile evaluations against a running `plait serve` (a process of its own), on SQLite and
PostgreSQL: expressions that spin in a builtin QuickJS cannot interrupt, forty at once in one
MAP and more in runs of their own. While they run `/api/health` answers; each of them ends at
its limit (its evaluator process is killed); another run's expression gets a place at once (a
run with all its children holds one fair share, not one per item); the server is whole after.

The bounds are generous (a second for a health check, seconds past a 0.3 s limit): they tell
"answered" from "held for the builtin's tens of seconds", never fast from slow.
`bench/health_under_load.py` measures the real latency."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from api_helpers import free_port

from plait.testing import HttpRuns, wait_until_healthy
from tests.plait_cli import start_plait

LIMIT = 0.3
ITEMS = 40
UNINTERRUPTIBLE = "'a'.repeat(200000).indexOf('a'.repeat(100000) + 'b')"
"""Tens of seconds of CPU in QuickJS whatever its time limit: only killing its process stops it."""


def _graph(graph_id: str, nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"source": json.dumps({"plait": 1, "id": graph_id, "nodes": nodes, "edges": []})}


SPIN = {"id": "spin", "type": "TRANSFORM", "transform_expr": UNINTERRUPTIBLE, "timeout_s": LIMIT}
GRAPHS = [
    _graph(
        "hostile_map",
        [
            {
                "id": "m",
                "type": "MAP",
                "items": "input.values",
                "max_concurrency": ITEMS,
                "on_item_error": "collect",
                "body": {"nodes": [SPIN], "edges": []},
            }
        ],
    ),
    _graph("hostile", [SPIN]),
    _graph("victim", [{"id": "t", "type": "TRANSFORM", "transform_expr": "({n: input.n + 1})"}]),
]


@contextmanager
def plait_serve(db_url: str, cwd: Path) -> Iterator[str]:
    """`plait serve` on a free port of loopback, until the block ends (then SIGTERM). Its
    `[resources]` gate is off: on a busy host it would hold new runs back for CPU (a deployer's
    choice, tested elsewhere), and what is measured here is the sandbox's own sharing."""
    (cwd / "plait.toml").write_text("[resources]\nenabled = false\n")
    port = free_port()
    server = start_plait(
        "serve", "--db", db_url, "--port", str(port), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, alive=lambda: server.poll() is None)
        yield url
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


class HealthProbe:
    """Asks `/api/health` every 50 ms on a thread of its own; keeps how long each answer took."""

    def __init__(self, url: str):
        self.url = url
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while not self._stop.is_set():
                started = time.monotonic()
                response = client.get("/api/health")
                self.latencies.append(time.monotonic() - started)
                if response.status_code != 200:
                    self.failures.append(f"{response.status_code}: {response.text[:200]}")
                self._stop.wait(0.05)


def _ended(runs: HttpRuns, run_id: str, timeout: float) -> dict[str, Any]:
    return runs.wait_status(run_id, "completed", "failed", timeout=timeout)


def test_hostile_evaluations_never_hold_the_server(db_url: str, tmp_path: Path) -> None:
    with plait_serve(db_url, tmp_path) as url, httpx.Client(base_url=url, timeout=30) as client:
        runs = HttpRuns(client)
        for graph in GRAPHS:
            assert client.post("/api/graphs", json=graph).status_code == 201
        assert _ended(runs, runs.start("victim", {"n": 0}), 60)["status"] == "completed"  # the sandbox is up
        attacked = time.monotonic()
        with HealthProbe(url) as health:
            swarm = runs.start("hostile_map", {"values": list(range(ITEMS))})
            singles = [runs.start("hostile", {"k": k}) for k in range(2)]
            time.sleep(1.0)  # every place of the sandbox is spinning now
            victims = []
            for n in range(3):
                started = time.monotonic()
                run = _ended(runs, runs.start("victim", {"n": n}), 60)
                victims.append((run["status"], run["output"], time.monotonic() - started))
            ended = {run_id: _ended(runs, run_id, 180) for run_id in [swarm, *singles]}
        took = time.monotonic() - attacked

        assert health.failures == []
        assert len(health.latencies) > 20
        assert max(health.latencies) < 1.0, f"health took up to {max(health.latencies):.2f} s during the attack"
        for n, (status, output, waited) in enumerate(victims):
            assert (status, output) == ("completed", {"n": n + 1})
            assert waited < 5.0, f"another run's expression waited {waited:.2f} s behind the attack"
        for run_id in singles:
            assert ended[run_id]["status"] == "failed"
            (node,) = ended[run_id]["nodes"]
            assert f"exceeded {LIMIT:g} s" in node["error"]["message"]
            # its start, a new evaluator process at most, the limit, the kill
            assert node["attempts"][-1]["duration_ms"] < (LIMIT + 3.0) * 1000, node["attempts"]
        items = ended[swarm]["output"]
        assert len(items) == ITEMS
        assert all("error" in item for item in items)
        # two places for the whole MAP (its fair share), a limit and a new process per item:
        # far from the forty builtins' tens of seconds each
        assert took < 120, f"the attack lasted {took:.0f} s"
        children = client.get("/api/runs", params={"children": "true", "limit": 200}).json()["items"]
        item_runs = [run for run in children if run.get("parent_run_id") == swarm]
        assert len(item_runs) == ITEMS
        sample = client.get(f"/api/runs/{item_runs[0]['id']}").json()
        assert f"exceeded {LIMIT:g} s" in sample["nodes"][0]["error"]["message"]
        assert _ended(runs, runs.start("victim", {"n": 41}), 60)["output"] == {"n": 42}
        assert client.get("/api/health").status_code == 200
