"""A WAIT that parks its run, as people meet it: `plait run` waits for it in the foreground and
finishes the run, and `plait serve` continues a parked run when it is due, also one parked
before the server (re)started. Real processes, a real SQLite file, a real server on loopback."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx

from tests.plait_cli import run_plait, start_plait

WAITING = """plait: 1
id: later
nodes:
  - id: first
    type: TRANSFORM
    transform_expr: "({n: input.n})"
  - id: pause
    type: WAIT
    delay_s: 3
  - id: after
    type: TRANSFORM
    transform_expr: "({n: nodes.first.n + 1})"
edges:
  - {source: first, target: pause}
  - {source: pause, target: after}
"""


def test_plait_run_waits_in_the_foreground_and_finishes_the_run(tmp_path: Path) -> None:
    (tmp_path / "later.yaml").write_text(WAITING)
    started = time.monotonic()
    done = run_plait("run", "later.yaml", "-i", "n=1", cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started >= 3
    assert '"n": 2' in done.stdout
    assert "waiting until" in done.stderr
    assert "(a WAIT node)" in done.stderr


def _serve(tmp_path: Path, port: int) -> subprocess.Popen[str]:
    db = f"sqlite:///{tmp_path / 'plait.db'}"
    return start_plait(
        "serve",
        "--db",
        db,
        "--port",
        str(port),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _ready(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError("the server did not start")


def test_a_server_continues_a_run_parked_before_it_restarted(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = _serve(tmp_path, port)
    try:
        _ready(url)
        assert httpx.post(f"{url}/api/graphs", json={"source": WAITING}, timeout=30).status_code == 201
        run_id = httpx.post(f"{url}/api/runs", json={"graph": "later", "input": {"n": 1}}, timeout=30).json()["run_id"]
        deadline = time.monotonic() + 20
        while (run := httpx.get(f"{url}/api/runs/{run_id}", timeout=10).json())["status"] != "paused":
            assert time.monotonic() < deadline, run
            time.sleep(0.1)
        due = run["wake_at"]
        assert due is not None
        server.send_signal(signal.SIGTERM)  # parked: the stop has nothing to wait for
        server.wait(timeout=20)

        server = _serve(tmp_path, port)
        _ready(url)
        deadline = time.monotonic() + 30
        while (run := httpx.get(f"{url}/api/runs/{run_id}", timeout=10).json())["status"] != "completed":
            assert time.monotonic() < deadline, run
            time.sleep(0.2)
        assert run["output"] == {"n": 2}
        assert run["completed_at"] >= due
        assert run["wake_at"] is None
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)
