"""`plait runs diff RUN_A RUN_B` as a user runs it: a real process on runs recorded in SQLite or PostgreSQL."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from plait.model.enums import RunStatus
from plait.store import Store
from tests.engine.test_engine import execute, graph_file, llm, script
from tests.plait_cli import run_plait

CHAIN = [{"source": "a", "target": "b", "schema_id": "text"}, {"source": "b", "target": "END", "schema_id": "text"}]


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, timeout=120)


def run_chain(store: Store, tmp_path: Path, graph: str, a: str, b: str) -> str:
    provider = script(tmp_path, [{"node": "a", "output": {"text": a}}, {"node": "b", "output": {"text": b}}])
    outcome = execute(store, graph, provider)
    assert outcome.status == RunStatus.COMPLETED
    return outcome.run_id


def test_changed_runs_show_a_table_and_the_changed_fields(store: Store, db_url: str, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a"), llm("b", "{{ a.text }}")], CHAIN)
    first = run_chain(store, tmp_path, graph, "same", "old answer\nsecond line [kept]")
    second = run_chain(store, tmp_path, graph, "same", "new answer\nsecond line [kept]")
    result = plait("runs", "diff", first, second, "--db", db_url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"A run {first}" in out
    assert f"B run {second}" in out
    assert "run outputs: differ" in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") == 5}
    assert "same" in rows["a"]
    assert "changed" in rows["b"]
    assert '~ $.text: "old answer\\nsecond line [kept]" → "new answer\\nsecond line [kept]"' in out  # markup escaped
    assert "-old answer" in out
    assert "+new answer" in out
    assert "1 same, 1 changed" in out


def test_identical_runs_exit_0_all_same(store: Store, db_url: str, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a"), llm("b")], CHAIN)
    first, second = run_chain(store, tmp_path, graph, "x", "y"), run_chain(store, tmp_path, graph, "x", "y")
    result = plait("runs", "diff", first, second, "--db", db_url, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "run outputs: equal" in result.stdout
    assert "2 same" in result.stdout
    assert "changed" not in result.stdout
    assert "differ" not in result.stdout


def test_json_document_shape(store: Store, db_url: str, tmp_path: Path) -> None:
    v1 = graph_file(tmp_path, [llm("a"), llm("b")], CHAIN)
    v2 = graph_file(tmp_path, [llm("a"), llm("c")], [{"source": "a", "target": "c", "schema_id": "text"}])
    first = run_chain(store, tmp_path, v1, "x", "y")
    provider = script(tmp_path, [{"node": "a", "output": {"text": "x2"}}, {"node": "c", "output": {"text": "z"}}])
    second = execute(store, v2, provider).run_id
    result = plait("runs", "diff", first, second, "--db", db_url, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc) == {"a", "b", "same_graph", "same_version", "same_model", "outputs_equal", "counts", "nodes"}
    assert doc["a"]["id"] == first
    assert doc["b"]["id"] == second
    assert (doc["a"]["graph"], doc["a"]["graph_version"], doc["b"]["graph_version"]) == ("g", 1, 2)
    assert set(doc["a"]) >= {"status", "output", "tokens_input", "tokens_output", "cost_usd"}
    assert (doc["same_graph"], doc["same_version"], doc["outputs_equal"]) == (True, False, False)
    assert doc["counts"] == {"same": 0, "changed": 1, "status": 0, "only_a": 1, "only_b": 1}
    nodes = {n["node_id"]: n for n in doc["nodes"]}
    assert [n["node_id"] for n in doc["nodes"]] == ["a", "b", "c"]
    assert all(set(n) == {"node_id", "verdict", "a", "b", "changes", "text_diffs", "notes"} for n in doc["nodes"])
    a = nodes["a"]
    assert a["verdict"] == "changed"
    assert {k: a["a"][k] for k in ("status", "activation", "output")} == {
        "status": "completed",
        "activation": 1,
        "output": {"text": "x"},
    }
    assert a["changes"] == [{"path": "$.text", "kind": "changed", "old": "x", "new": "x2"}]
    assert (nodes["b"]["verdict"], nodes["b"]["b"]) == ("only_a", None)
    assert (nodes["c"]["verdict"], nodes["c"]["a"]) == ("only_b", None)


def test_the_header_says_when_graphs_or_versions_differ(store: Store, db_url: str, tmp_path: Path) -> None:
    v1 = graph_file(tmp_path, [llm("a"), llm("b")], CHAIN)
    v2 = graph_file(tmp_path, [llm("a"), llm("b", "other {{ a.text }}")], CHAIN)
    other = graph_file(tmp_path, [llm("a"), llm("b")], CHAIN, id="h")
    runs = [run_chain(store, tmp_path, g, "x", "y") for g in (v1, v2, other)]
    versions = plait("runs", "diff", runs[0], runs[1], "--db", db_url, cwd=tmp_path)
    assert versions.returncode == 0, versions.stderr
    assert "graph versions differ: v1 and v2" in versions.stdout
    graphs = plait("runs", "diff", runs[0], runs[2], "--db", db_url, cwd=tmp_path)
    assert graphs.returncode == 0, graphs.stderr
    assert "runs of different graphs (g and h)" in graphs.stdout
    assert "2 same" in graphs.stdout


def test_unknown_run_id_exits_2_with_a_hint(store: Store, db_url: str, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a"), llm("b")], CHAIN)
    known = run_chain(store, tmp_path, graph, "x", "y")
    for args in ((known, "nope"), ("nope", known)):
        result = plait("runs", "diff", *args, "--db", db_url, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stdout == ""
        assert "plait: no run 'nope'" in result.stderr
        assert "hint:" in result.stderr
        assert "Traceback" not in result.stderr
