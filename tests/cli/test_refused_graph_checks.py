"""`validate` and `--dry-run` do not say "ok" about a graph `plait run` then refuses: a node type
this release cannot execute is a warning, and an MCP server that is not configured fails the dry
run naming `--config` (as the real run's refusal does). Real `plait` processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MEETING = [
    str(EXAMPLES / "meeting_times.yaml"),
    "--input-file",
    str(EXAMPLES / "inputs" / "meeting_times.yaml"),
    "--llm",
    f"scripted:{EXAMPLES / 'scripted' / 'meeting_times.yaml'}",
]
CODE_GRAPH = """plait: 1
id: counts
input_schema: {type: object, properties: {text: {type: string}}, required: [text]}
nodes:
  - id: count_words
    type: LOOP
    graph: step.yaml
    while_expr: "false"
edges:
  - {source: count_words, target: END}
"""
STEP_GRAPH = """plait: 1
id: step
nodes:
  - id: count
    type: TRANSFORM
    transform_expr: "({count: 1})"
edges: []
"""


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "plait", *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def code_graph(tmp_path: Path) -> Path:
    """A graph with a node type this release validates but does not execute yet (LOOP)."""
    (tmp_path / "step.yaml").write_text(STEP_GRAPH)
    path = tmp_path / "counts.yaml"
    path.write_text(CODE_GRAPH)
    return path


def test_validate_warns_about_a_node_type_this_release_cannot_execute(tmp_path: Path) -> None:
    path = code_graph(tmp_path)
    text = plait("validate", str(path), cwd=tmp_path)
    assert text.returncode == 0, text.stderr  # still a valid graph
    assert "1 warning" in text.stdout
    assert "warning planning/not_executable [node 'count_words']" in text.stderr
    assert "`plait run` refuses this graph" in text.stderr

    payload = json.loads(plait("validate", str(path), "--json", cwd=tmp_path).stdout)
    assert [(w["code"], w["node_id"]) for w in payload["warnings"]] == [("not_executable", "count_words")]

    refused = plait("run", str(path), "-i", "text=a b", cwd=tmp_path)
    assert refused.returncode == 2
    assert "count_words" in refused.stderr


def test_the_dry_run_warns_about_it_too(tmp_path: Path) -> None:
    dry = plait("run", str(code_graph(tmp_path)), "-i", "text=a b", "--dry-run", cwd=tmp_path)
    assert "warning: node 'count_words': LOOP nodes are validated but not executed" in dry.stderr


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
