"""Child graphs of SUBGRAPH, MAP and LOOP nodes at compile time: a graph file is compiled and
embedded as the node's `body`, an inline body is compiled with its own lines, and cycles,
depth and invalid child graphs are errors that say where."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from plait.compile.compiler import compile_file

STEP = {"nodes": [{"id": "step", "type": "TRANSFORM", "transform_expr": "current"}], "edges": []}


def write(folder: Path, name: str, data: dict[str, Any]) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({"plait": 1, **data}, sort_keys=False))
    return path


def test_a_graph_file_is_embedded_as_the_nodes_body(tmp_path: Path) -> None:
    write(tmp_path, "step.yaml", {"id": "step_graph", **STEP})
    path = write(
        tmp_path, "main.yaml", {"id": "main", "nodes": [{"id": "s", "type": "SUBGRAPH", "graph": "step.yaml"}]}
    )
    result = compile_file(path)
    assert result.errors == []
    assert result.expanded is not None
    body = result.expanded.nodes[0].body
    assert body is not None
    assert body["id"] == "step_graph"
    assert body["nodes"][0]["id"] == "step"


def test_graph_files_that_run_each_other_are_a_cycle(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", {"id": "a", "nodes": [{"id": "s", "type": "SUBGRAPH", "graph": "b.yaml"}]})
    write(tmp_path, "b.yaml", {"id": "b", "nodes": [{"id": "s", "type": "MAP", "items": "input.x", "graph": "a.yaml"}]})
    result = compile_file(tmp_path / "a.yaml")
    codes = [(d.code, d.node_id) for d in result.errors]
    assert ("graph_recursion", "s") in codes
    cycle = next(d for d in result.errors if d.code == "graph_recursion")
    assert "graph files run each other in a cycle: a.yaml → b.yaml → a.yaml" in cycle.message


def test_an_invalid_inline_body_is_reported_at_its_line_in_this_file(tmp_path: Path) -> None:
    body = {
        "nodes": [{"id": "step", "type": "TRANSFORM", "transform_expr": "current"}],
        "edges": [{"source": "step", "target": "nowhere"}],
    }
    path = write(
        tmp_path,
        "main.yaml",
        {"id": "main", "nodes": [{"id": "loop", "type": "LOOP", "while_expr": "false", "body": body}]},
    )
    result = compile_file(path)
    assert result.errors[0].code == "invalid_child_graph"
    inner = result.errors[1]
    assert inner.message.startswith("in the body of 'loop': ")
    assert inner.file == str(path)
    lines = path.read_text().splitlines()
    assert inner.line is not None
    assert "nowhere" in lines[inner.line - 1]  # the line of the bad edge, inside the body


def test_bodies_nest_at_most_five_deep(tmp_path: Path) -> None:
    body: dict[str, Any] = STEP
    for depth in range(7):
        body = {"nodes": [{"id": f"s{depth}", "type": "SUBGRAPH", "body": body}], "edges": []}
    path = write(tmp_path, "deep.yaml", {"id": "deep", **body})
    result = compile_file(path)
    assert any(d.code == "graph_recursion" and "deeper than 5 levels" in d.message for d in result.errors)


def test_a_map_or_loop_inputs_template_may_read_the_item_and_the_loop(tmp_path: Path) -> None:
    nodes = [
        {
            "id": "m",
            "type": "MAP",
            "items": "input.xs",
            "inputs": {"x": "{{ item }}", "i": "{{ index }}"},
            "body": STEP,
        },
        {"id": "l", "type": "LOOP", "while_expr": "false", "inputs": {"p": "{{ loop.previous }}"}, "body": STEP},
        {"id": "s", "type": "SUBGRAPH", "inputs": {"x": "{{ item }}"}, "body": STEP},
    ]
    edges = [{"source": "m", "target": "l"}, {"source": "l", "target": "s"}]
    result = compile_file(write(tmp_path, "g.yaml", {"id": "g", "nodes": nodes, "edges": edges}))
    assert [(d.code, d.node_id) for d in result.errors] == [("bad_template_path", "s")]  # no item outside a MAP


def test_content_without_a_file_reads_no_graph_file_it_names_however_deep(tmp_path: Path) -> None:
    """An upload, a model's draft or a stored document has no folder: a file it names, at the
    top or inside an inline body, is refused without being read (it could be any file the
    server can read)."""
    from plait.compile.compiler import compile_data

    secret = write(tmp_path, "secret.yaml", {"id": "secret_marker_graph", **STEP})
    top = {"plait": 1, "id": "top", "nodes": [{"id": "s", "type": "SUBGRAPH", "graph": str(secret)}]}
    nested = {
        "plait": 1,
        "id": "nested",
        "nodes": [{"id": "outer", "type": "SUBGRAPH", "body": {"nodes": [{"id": "inner", "type": "SUBGRAPH",
                                                                          "graph": str(secret)}], "edges": []}}],
    }  # fmt: skip
    for data in (top, nested):
        result = compile_data(data)
        assert "file_in_content" in [d.code for d in result.errors], result.errors
        assert "secret_marker_graph" not in repr(result)
    skill = {"plait": 1, "id": "skilled", "nodes": [{"id": "k", "type": "SKILL", "skill": str(secret)}]}
    assert [d.code for d in compile_data(skill).errors] == ["skill_in_upload"]
    from_file = write(tmp_path, "main.yaml", {"id": "main", "nodes": top["nodes"]})
    assert compile_file(from_file).errors == []  # a graph file may name its neighbours: the person owns both
