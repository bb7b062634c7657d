"""A short, bounded run of bench/http_load.py, so that CI exercises `plait serve`
under concurrency: 20 clients at once each start a run and poll it until it ends, on SQLite.
No timing assertions (the figures live in docs/performance.md): no request may fail, no run
may end otherwise than `completed`, and the server's log may show no traceback or lock error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "http_load.py"


def test_twenty_concurrent_clients_start_and_poll_runs_without_an_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--clients", "20", "--rounds", "2", "--delay-ms", "20", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["error_samples"] == [], summary
    assert summary["errors"] == 0
    assert (summary["runs"], summary["completed"], summary["statuses"]) == (40, 40, {"completed": 40})
    assert summary["start_ms"]["n"] == 40
    assert summary["poll_ms"]["n"] >= 40
    assert summary["health_ms"]["n"] >= 1  # /api/health was asked during the load, and answered 200
    assert proc.returncode == 0
