"""An expression that reads a node by its bare name (`classify.label`, as a template would) fails
with a ReferenceError when it runs; validation says so first, with the way to read it. A name
the expression declares itself, a Python CODE node and a JavaScript global are not node reads."""

from __future__ import annotations

import itertools
from typing import Any

from plait.evolve.upload import check_upload


def graph(*nodes: dict[str, Any]) -> dict[str, Any]:
    first = {"id": "classify", "type": "TRANSFORM", "transform_expr": "({label: 'bug'})"}
    ids = [first["id"], *(n["id"] for n in nodes)]
    return {
        "plait": 1,
        "id": "bare",
        "nodes": [first, *nodes],
        "edges": [{"source": a, "target": b} for a, b in itertools.pairwise([*ids, "END"])],
    }


def bare(doc: dict[str, Any]) -> list[Any]:
    return [d for d in check_upload(doc).errors if d.code == "bare_node_name"]


def test_a_node_read_by_its_bare_name_is_an_error_with_the_way_to_read_it() -> None:
    found = bare(graph({"id": "route", "type": "TRANSFORM", "transform_expr": "({x: classify.label})"}))
    assert len(found) == 1, found
    assert found[0].node_id == "route"
    assert "'classify.label' reads node 'classify' by its bare name" in found[0].message
    assert found[0].hint == "an expression reads a node's output as nodes.classify.label"


def test_declared_names_python_code_and_nodes_paths_are_not_bare_reads() -> None:
    declared = {
        "id": "route",
        "type": "TRANSFORM",
        "transform_expr": "((classify) => ({x: classify.label}))(nodes.classify)",
    }
    assert bare(graph(declared)) == []
    through_nodes = {
        "id": "route",
        "type": "TRANSFORM",
        "transform_expr": "({x: nodes.classify.label, y: 'classify.label'})",
    }
    assert bare(graph(through_nodes)) == []
    python = {"id": "route", "type": "CODE", "language": "python", "code": "classify = {}\nreturn classify.get('x')"}
    assert bare(graph(python)) == []
