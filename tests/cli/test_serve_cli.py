"""`plait serve --port`: a port outside 1-65535 is a usage error, and a port that is taken says
so (naming the port and the flag that fixes it); both exit 2 before anything is served."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.plait_cli import run_plait, start_plait


def serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    db = f"sqlite:///{cwd / 'plait.db'}"
    return run_plait("serve", "--db", db, *args, cwd=cwd, env={**os.environ, "COLUMNS": "300"}, timeout=60)


@pytest.mark.parametrize("port", ["99999", "0", "-1", "65536"])
def test_a_port_outside_the_range_is_a_usage_error(tmp_path: Path, port: str) -> None:
    result = serve("--port", port, cwd=tmp_path)
    assert result.returncode == 2
    assert "Invalid value for '--port'" in result.stderr
    assert ("less than or equal to 65535" if int(port) > 0 else "greater than or equal to 1") in result.stderr
    assert "serving" not in result.stderr
    assert not (tmp_path / "plait.db").exists()  # refused before the store was opened


def test_a_port_in_use_is_named_with_the_fix(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = serve("--port", str(port), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert "--port" in result.stderr
    assert "serving" not in result.stderr


SPINNING = """
plait: 1
id: spin
nodes:
  - {id: a, type: TRANSFORM, transform_expr: "(() => { for (;;) {} })()", timeout_s: 25}
  - {id: b, type: TRANSFORM, transform_expr: "(() => { for (;;) {} })()", timeout_s: 25}
  - {id: c, type: TRANSFORM, transform_expr: "(() => { for (;;) {} })()", timeout_s: 25}
  - {id: d, type: MERGE}
edges:
  - {source: a, target: d}
  - {source: b, target: d}
  - {source: c, target: d}
"""


def test_sigterm_stops_a_server_whose_runs_spin_in_the_sandbox_promptly(tmp_path: Path) -> None:
    """Evaluations that would spin for 25 s do not hold a stopping server: their sandbox
    processes are killed, the runs are given back, and the process exits."""
    import signal
    import time

    import httpx

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    db = f"sqlite:///{tmp_path / 'plait.db'}"
    server = start_plait(
        "serve",
        "--db",
        db,
        "--port",
        str(port),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)
        assert httpx.post(f"{url}/api/graphs", json={"source": SPINNING}, timeout=30).status_code == 201
        for _ in range(2):
            assert httpx.post(f"{url}/api/runs", json={"graph": "spin", "input": {}}, timeout=30).status_code == 202
        time.sleep(2)  # the evaluations are spinning now
        stopped = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=20)
        assert time.monotonic() - stopped < 12  # not the 25 s the expressions asked for
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
