"""A graph built in code is the graph of the file with that content: the same `GraphDef`, the
same diagnostics, the same YAML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import plait
from plait.compile import compile_file
from plait.compile.builder import GraphBuilder
from plait.compile.dump import dump_yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GRAPHS = sorted(p for p in EXAMPLES.glob("*.yaml") if "type: SKILL" not in p.read_text())
BROKEN = [
    EXAMPLES / "broken" / name
    for name in ("cycle.yaml", "dangling_edge.yaml", "unknown_field.yaml", "not_upstream.yaml", "bad_template.yaml")
]


def _rebuilt(path: Path) -> GraphBuilder:
    """The file's document written again with the builder's methods, one call per item."""
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    header = {k: v for k, v in doc.items() if k not in ("plait", "id", "schemas", "nodes", "edges")}
    g = GraphBuilder(doc["id"], **header)
    for schema in doc.get("schemas") or []:
        g.schema(**schema)
    for node in doc.get("nodes") or []:
        g.node(**node)
    for edge in doc.get("edges") or []:
        g.edge(**edge)
    return g


@pytest.mark.parametrize("path", GRAPHS, ids=lambda p: p.stem)
def test_the_same_graph_and_yaml_as_the_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(path.parent)  # graph files a node names are found from the working directory
    built = _rebuilt(path)
    assert built.build() == plait.load_graph(path)
    assert built.to_yaml() == dump_yaml(plait.load_graph(path))


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_the_same_diagnostics_as_the_file(path: Path) -> None:
    from_file = compile_file(path)
    from_code = _rebuilt(path).check()
    assert from_file.errors, "the example is meant to be broken"
    assert [(d.code, d.node_id, d.message) for d in from_code.errors] == [
        (d.code, d.node_id, d.message) for d in from_file.errors
    ]
    with pytest.raises(plait.GraphInvalid):
        _rebuilt(path).build()


def test_the_convenience_methods_write_the_file_formats_fields() -> None:
    g = plait.GraphBuilder("tiny", input_schema={"type": "object", "properties": {"n": {"type": "number"}}})
    g.llm_call("ask", "Double {{ input.n }}.", system="You do arithmetic.").condition("big", "nodes.ask > 10")
    g.transform("yes", "'big'").transform("no", "'small'")
    g.edge("ask", "big").edge("big", "yes", condition_key="true").edge("big", "no", condition_key="false")
    nodes = {n["id"]: n for n in g.data()["nodes"]}
    assert nodes["ask"] == {"id": "ask", "type": "LLM_CALL", "system_prompt": "You do arithmetic.",
                            "user_prompt_tpl": "Double {{ input.n }}."}  # fmt: skip
    assert nodes["big"]["condition_expr"] == "nodes.ask > 10"
    assert g.check().valid, [d.format() for d in g.check().errors]
    g.data()["nodes"].clear()  # a copy: the builder keeps its nodes
    assert len(g.data()["nodes"]) == 4
