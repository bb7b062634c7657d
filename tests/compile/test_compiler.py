"""Compiler semantics on real graphs: what passes, what fails, and what the compiled result holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.compile import CompileResult, compile_data, compile_file
from plait.model.nodes import NodeType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OBJ = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def graph(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": "g", "schemas": [{"id": "text", "schema": OBJ}], "nodes": nodes, "edges": edges, **extra}


def llm(node_id: str, prompt: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "LLM_CALL", "user_prompt_tpl": prompt, **extra}


def codes(result: CompileResult) -> list[str]:
    return sorted(d.code for d in result.errors)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_is_valid_without_warnings(path: Path) -> None:
    result = compile_file(path)
    assert result.errors == []
    assert result.warnings == []
    assert result.expanded is not None


def test_all_problems_are_reported_at_once() -> None:
    data = graph(
        [
            llm("a", "{{ input.x }}", condition_expr="1"),  # field_not_allowed
            llm("b", "{{ c.text }}"),  # not_upstream (c is downstream of b)
            llm("c", "{{ nobody.text }}"),  # bad_template_path
            {"id": "d", "type": "WHATEVER"},  # unknown_node_type
        ],
        [
            {"source": "a", "target": "b", "schema_id": "text"},
            {"source": "b", "target": "c", "schema_id": "txt"},  # unknown_schema
            {"source": "c", "target": "d"},
            {"source": "d", "target": "zzz"},  # dangling_edge
        ],
    )
    result = compile_data(data)
    assert codes(result) == [
        "bad_template_path",
        "dangling_edge",
        "field_not_allowed",
        "not_upstream",
        "unknown_node_type",
        "unknown_schema",
    ]
    assert {d.node_id for d in result.errors if d.node_id} == {"a", "b", "c", "d"}
    assert all(d.hint for d in result.errors)


def test_data_in_system_prompt_needs_the_opt_in() -> None:
    def compiled(**flags: Any) -> CompileResult:
        node = llm("b", "ok", system_prompt="Context: {{ a.text }}", **flags)
        return compile_data(graph([llm("a"), node], [{"source": "a", "target": "b", "schema_id": "text"}]))

    refused = compiled()
    assert codes(refused) == ["data_in_system_prompt"]
    assert refused.errors[0].category == "planning"
    assert compiled(allow_data_in_system_prompt=True).valid


def test_static_params_may_go_in_the_system_prompt_but_reference_params_may_not() -> None:
    params = [
        {"name": "role", "type": "input", "value": "You are terse."},
        {"name": "prior", "type": "reference", "reference_node": "a.text"},
    ]
    ok = llm("b", "{{ prior }}", system_prompt="{{ role }}", params=params)
    assert compile_data(graph([llm("a"), ok], [{"source": "a", "target": "b", "schema_id": "text"}])).valid
    leaky = llm("b", "x", system_prompt="{{ role }} {{ prior }}", params=params)
    result = compile_data(graph([llm("a"), leaky], [{"source": "a", "target": "b", "schema_id": "text"}]))
    assert codes(result) == ["data_in_system_prompt"]


def test_reference_params_are_checked_like_template_paths() -> None:
    node = llm("b", "{{ p }}", params=[{"name": "p", "type": "reference", "reference_node": "a.txet"}])
    result = compile_data(graph([llm("a"), node], [{"source": "a", "target": "b", "schema_id": "text"}]))
    assert codes(result) == ["bad_template_path"]
    assert result.errors[0].hint == "did you mean 'text'?"


def test_current_is_the_predecessor_or_a_map_by_predecessor_id() -> None:
    single = compile_data(
        graph([llm("a"), llm("b", "{{ current.text }}")], [{"source": "a", "target": "b", "schema_id": "text"}])
    )
    assert single.valid
    nodes = [llm("a"), llm("b"), llm("c", "{{ current.a.text }} {{ current.b.text }}")]
    edges = [{"source": "a", "target": "c", "schema_id": "text"}, {"source": "b", "target": "c", "schema_id": "text"}]
    assert compile_data(graph(nodes, edges)).valid
    nodes[2] = llm("c", "{{ current.text }}")
    assert codes(compile_data(graph(nodes, edges))) == ["bad_template_path"]


def test_merge_output_is_keyed_by_input_node() -> None:
    nodes = [llm("a"), llm("b"), {"id": "m", "type": "MERGE"}, llm("z", "{{ m.a.text }} {{ m.b.text }}")]
    edges = [
        {"source": "a", "target": "m", "schema_id": "text"},
        {"source": "b", "target": "m", "schema_id": "text"},
        {"source": "m", "target": "z"},
    ]
    assert compile_data(graph(nodes, edges)).valid
    nodes[3] = llm("z", "{{ m.c.text }}")
    assert codes(compile_data(graph(nodes, edges))) == ["bad_template_path"]


def test_conflicting_out_edge_schemas_are_a_planning_error() -> None:
    number = {"type": "object", "properties": {"text": {"type": "number"}}}
    data = graph(
        [llm("a"), llm("b"), llm("c")],
        [{"source": "a", "target": "b", "schema_id": "text"}, {"source": "a", "target": "c", "schema_id": "num"}],
    )
    data["schemas"].append({"id": "num", "schema": number})
    result = compile_data(data)
    assert codes(result) == ["schema_conflict"]
    assert "$.text" in result.errors[0].message


def test_output_contract_on_end_edge_counts_for_conflicts_and_end_is_reserved() -> None:
    data = graph([llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    assert compile_data(data).valid
    data["nodes"].append({"id": "END", "type": "MERGE"})
    assert "reserved_id" in codes(compile_data(data))


def test_schema_dialect_follows_dollar_schema() -> None:
    tuple_items = {"type": "array", "items": [{"type": "string"}]}  # valid in Draft 7, not in 2020-12
    data = graph([llm("a")], [{"source": "a", "target": "END", "schema_id": "arr"}])
    data["schemas"] = [{"id": "arr", "schema": tuple_items}]
    assert compile_data(data).valid
    data["schemas"][0]["schema"] = {"$schema": "https://json-schema.org/draft/2020-12/schema", **tuple_items}
    result = compile_data(data)
    assert codes(result) == ["invalid_json_schema"]


def test_skill_is_inlined_with_namespaced_ids_and_rewired_edges() -> None:
    result = compile_file(EXAMPLES / "long_doc_summary.yaml")
    assert result.valid
    assert result.expanded is not None
    ids = [n.id for n in result.expanded.nodes]
    assert ids == ["clean", "__summarize__key_points", "__summarize__condense", "headline"]
    pairs = {(e.source_node_id, e.target_node_id, e.schema_id) for e in result.expanded.edges}
    assert pairs == {
        ("clean", "__summarize__key_points", "cleaned"),
        ("__summarize__key_points", "__summarize__condense", "__summarize__partial"),
        ("__summarize__condense", "headline", "summary"),
    }
    scope = result.scopes["__summarize__condense"]
    assert scope.skill_node_id == "summarize"
    assert scope.inputs == {"text": "{{ clean.text }}", "max_words": 120}
    assert result.aliases == {"summarize": ["__summarize__condense"]}
    assert all(n.type != NodeType.SKILL for n in result.expanded.nodes)
    assert result.topology is not None
    assert result.topology.levels[-1] == ["headline"]


def test_skill_including_itself_is_refused(tmp_path: Path) -> None:
    loop = {"id": "loop", "nodes": [{"id": "again", "type": "SKILL", "skill": "loop.yaml"}], "edges": []}
    (tmp_path / "loop.yaml").write_text(yaml.safe_dump(loop))
    result = compile_file(tmp_path / "loop.yaml")
    assert "skill_recursion" in codes(result)
    first = next(d for d in result.errors if d.code == "skill_recursion")
    assert first.category == "planning"
    assert first.node_id == "again"


def test_compile_data_has_no_positions_but_still_names_the_node() -> None:
    result = compile_data(graph([llm("a", "{{ nope.x }}")], []))
    assert [(d.code, d.node_id, d.line, d.file) for d in result.errors] == [("bad_template_path", "a", None, None)]
