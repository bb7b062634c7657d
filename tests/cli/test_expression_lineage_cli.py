"""What JavaScript, CODE and prompt scripts read is lineage: a correction of a value one of
them read reaches it under every policy, as a correction of what a template prints does. And
`plait validate` checks the paths an expression names as it checks template paths."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_corrections_cli import newest, only_run, shown
from tests.cli.test_run_cli import plait

ITEMS = {
    "id": "items",
    "version": "1.0.0",
    "schema": {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}}, "priority": {"type": "string"}},
        "required": ["items", "priority"],
    },
}


EXTRACT = "({items: input.text.split(' '), priority: 'high'})"


def graph(report: dict[str, Any], *, edges: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """extract -> mid -> report: `report` reads `extract` only through what its definition names
    (`mid` is its one predecessor)."""
    return {
        "id": "lineage",
        "name": "lineage",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "schemas": [ITEMS],
        "nodes": [
            {
                "id": "extract",
                "type": "TRANSFORM",
                "transform_expr": "({items: input.text.split(' '), priority: 'high'})",
            },
            {"id": "mid", "type": "TRANSFORM", "transform_expr": "({n: current.items.length})"},
            {"id": "report", **report},
        ],
        "edges": edges
        or [
            {"source_node_id": "extract", "target_node_id": "mid", "schema_id": "items"},
            {"source_node_id": "mid", "target_node_id": "report"},
        ],
    }


def run_graph(tmp_path: Path, doc: dict[str, Any], *args: str) -> str:
    file = tmp_path / "g.json"
    file.write_text(json.dumps(doc))
    done = plait("run", str(file), "-i", "text=a b c", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return only_run(tmp_path)


def correct_extract(tmp_path: Path, run_id: str, policy: str) -> Any:
    fix = tmp_path / "fix.json"
    fix.write_text(json.dumps({"items": ["x", "y"], "priority": "low"}))
    return plait("override", run_id, "extract", "--file", str(fix), "--policy", policy, cwd=tmp_path)


def test_a_transform_that_names_an_upstream_node_is_one_of_its_readers(tmp_path: Path) -> None:
    report = {"type": "TRANSFORM", "transform_expr": "({first: nodes.extract.items[0], n: current.n})"}
    run_id = run_graph(tmp_path, graph(report))
    ledger = shown(run_id, tmp_path, "--ledger")["ledger"]
    first = next(v for v in ledger if v["owner"] == "extract" and v["version"] == 1)
    assert sorted(r["node_id"] for r in first["consumed_by"]) == ["mid", "report"]

    kept = correct_extract(tmp_path, run_id, "KEEP")
    assert kept.returncode == 0, kept.stderr
    assert "kept as they are: mid, report" in kept.stderr
    assert "nothing read the old value" not in kept.stderr

    stale = correct_extract(tmp_path, run_id, "INVALIDATE")
    assert "stale now: mid, report" in stale.stderr
    assert newest(shown(run_id, tmp_path))["report"]["status"] == "stale"

    rerun = plait("rerun", run_id, "report", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert newest(shown(run_id, tmp_path))["report"]["output"]["first"] == "x"  # it read the correction


def test_a_code_node_reads_outputs_under_the_name_its_main_gives_them(tmp_path: Path) -> None:
    code = "function main(inp, ns, cur) { return {first: ns.extract.items[0], n: cur.n}; }"
    run_id = run_graph(tmp_path, graph({"type": "CODE", "code": code}))
    assert newest(shown(run_id, tmp_path))["report"]["output"] == {"first": "a", "n": 3}
    stale = correct_extract(tmp_path, run_id, "INVALIDATE")
    assert "stale now: mid, report" in stale.stderr


def test_a_prompt_script_that_reads_a_node_through_getvar_is_its_reader(tmp_path: Path) -> None:
    script = 'async function main() { return "Sort " + (await getVar("nodes.extract.items")).join(", "); }'
    report = {"type": "LLM_CALL", "prompt_script": {"language": "js", "code": script}}
    answers = tmp_path / "answers.yaml"
    answers.write_text(json.dumps({"responses": [{"node": "report", "output": "sorted"}]}))
    run_id = run_graph(tmp_path, graph(report), "--llm", f"scripted:{answers}")
    assert newest(shown(run_id, tmp_path))["report"]["consumed"] == {"mid": 1, "extract": 1}
    stale = correct_extract(tmp_path, run_id, "INVALIDATE")
    assert "stale now: mid, report" in stale.stderr


def test_validate_checks_the_paths_an_expression_names(tmp_path: Path) -> None:
    doc = graph({"type": "TRANSFORM", "transform_expr": "({n: current.n})"})
    doc["nodes"].append({"id": "branch", "type": "CONDITION", "condition_expr": "nodes.extract.priorty"})
    doc["nodes"].append({"id": "gone", "type": "TRANSFORM", "transform_expr": "({x: nodes.extrct.items})"})
    doc["edges"] += [
        {"source_node_id": "report", "target_node_id": "branch"},
        {"source_node_id": "branch", "target_node_id": "gone", "condition_key": "high", "default": True},
    ]
    file = tmp_path / "g.json"
    file.write_text(json.dumps(doc))
    done = plait("validate", str(file), cwd=tmp_path)
    assert done.returncode != 0
    out = done.stdout + done.stderr
    assert "'priorty' is not a field of the output of 'extract'" in out
    assert "did you mean 'priority'?" in out
    assert "'nodes.extrct.items'" in out
    assert "did you mean 'extract'?" in out
    assert "bad_expression_path" in out

    doc["nodes"][-2]["condition_expr"] = "nodes.extract.priority.toUpperCase() + input.text.length"
    doc["nodes"][-1]["transform_expr"] = "({x: nodes['extract'].items, s: 'nodes.nothing.here'})"
    file.write_text(json.dumps(doc))
    fixed = plait("validate", str(file), cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
