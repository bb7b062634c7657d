"""`--dry-run` does not say "ok" about a graph `plait run` then refuses: an MCP server that is not
configured fails the dry run naming `--config` (as the real run's refusal does). Real `plait`
processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.plait_cli import run_plait

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MEETING = [
    str(EXAMPLES / "meeting_times.yaml"),
    "--input-file",
    str(EXAMPLES / "inputs" / "meeting_times.yaml"),
    "--llm",
    f"scripted:{EXAMPLES / 'scripted' / 'meeting_times.yaml'}",
]


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, timeout=60)


def test_the_dry_run_checks_that_the_mcp_servers_are_configured_and_names_config(tmp_path: Path) -> None:
    missing = plait("run", *MEETING, "--dry-run", cwd=tmp_path)
    assert missing.returncode == 2
    assert "uses the MCP server 'time', which is not configured" in missing.stderr
    assert "--config examples/mcp.toml" in missing.stderr

    configured = plait("run", *MEETING, "--dry-run", "--config", str(EXAMPLES / "mcp.toml"), cwd=tmp_path)
    assert configured.returncode == 0, configured.stderr  # checked from the file: no server was started


def test_the_real_runs_refusal_names_config(tmp_path: Path) -> None:
    refused = plait("run", *MEETING, cwd=tmp_path)
    assert refused.returncode == 2
    assert "MCP server 'time'" in refused.stderr
    assert "--config examples/mcp.toml" in refused.stderr
