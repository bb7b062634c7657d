"""`plait serve --port`: a port outside 1-65535 is a usage error, and a port that is taken says
so (naming the port and the flag that fixes it); both exit 2 before anything is served."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def serve(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    db = f"sqlite:///{cwd / 'plait.db'}"
    return subprocess.run(
        [sys.executable, "-m", "plait", "serve", "--db", db, *args], cwd=cwd, capture_output=True, text=True,
        timeout=60, check=False, env={**os.environ, "COLUMNS": "300"},
    )  # fmt: skip


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
