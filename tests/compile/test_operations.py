"""Operations on a graph document: the schema a model answers under, and applying them."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plait.compile.document_diff import diff_documents
from plait.compile.operations import MAX_OPERATIONS, apply_operations, node_fields, operations_schema
from plait.evolve.upload import check_upload
from plait.model.nodes import NodeType

BASE: dict[str, Any] = {
    "plait": 1,
    "id": "notes",
    "nodes": [
        {"id": "summarise", "type": "LLM_CALL", "user_prompt_tpl": "Summarise: {{ input.text }}"},
        {"id": "tidy", "type": "TRANSFORM", "transform_expr": "({text: nodes.summarise.summary})"},
    ],
    "edges": [{"source": "summarise", "target": "tidy", "schema_id": "summary"}],
    "schemas": [
        {
            "id": "summary",
            "version": "1.0.0",
            "schema": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
        }
    ],
}


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def test_the_schema_is_a_valid_json_schema_for_empty_and_filled_documents() -> None:
    for document in ({"id": "x"}, BASE):
        jsonschema.Draft202012Validator.check_schema(operations_schema(document))


def test_node_types_fields_and_existing_ids_are_closed_sets() -> None:
    schema = operations_schema(BASE)
    assert _valid(schema, [{"op": "add_node", "id": "judge", "type": "LLM_CALL", "fields": {"system_prompt": "x"}}])
    # a node type that does not exist, a field its type does not have, an id taken
    assert not _valid(schema, [{"op": "add_node", "id": "judge", "type": "LLM", "fields": {}}])
    assert not _valid(schema, [{"op": "add_node", "id": "judge", "type": "MERGE", "fields": {"system_prompt": "x"}}])
    assert not _valid(schema, [{"op": "add_node", "id": "tidy", "type": "MERGE", "fields": {}}])
    # set_field names an existing node and a field of its own type
    assert _valid(schema, [{"op": "set_field", "node": "summarise", "fields": {"system_prompt": "Be brief."}}])
    assert not _valid(schema, [{"op": "set_field", "node": "ghost", "fields": {"system_prompt": "x"}}])
    assert not _valid(schema, [{"op": "set_field", "node": "tidy", "fields": {"system_prompt": "x"}}])
    # and a value of the field's own type: a prompt is text, a token limit a positive whole number
    assert not _valid(schema, [{"op": "set_field", "node": "summarise", "fields": {"system_prompt": ["x"]}}])
    assert not _valid(schema, [{"op": "set_field", "node": "summarise", "fields": {"max_tokens_override": 0}}])
    assert not _valid(schema, [{"op": "set_field", "node": "summarise", "fields": {}}])
    assert not _valid(schema, [{"op": "remove_node", "node": "ghost"}])
    assert not _valid(schema, [{"op": "disconnect", "from": "ghost", "to": "tidy"}])
    assert not _valid(schema, [{"op": "rewrite_everything"}])


def test_a_document_without_nodes_offers_no_operation_on_existing_nodes() -> None:
    schema = operations_schema({"id": "x", "nodes": []})
    ops = {branch["properties"]["op"]["const"] for branch in schema["items"]["anyOf"]}
    assert ops == {"add_node", "connect", "add_schema", "set_graph"}
    assert "skill_scope" not in node_fields(NodeType.LLM_CALL)
    assert "id" not in node_fields(NodeType.LLM_CALL)


def test_operations_build_a_graph_that_compiles() -> None:
    ops = [
        {"op": "add_node", "id": "judge", "type": "LLM_CALL", "fields": {"user_prompt_tpl": "Judge {{ tidy.text }}"}},
        {"op": "add_schema", "id": "verdict", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}},
        {"op": "connect", "from": "tidy", "to": "judge"},
        {"op": "connect", "from": "judge", "to": "END", "schema_id": "verdict"},
        {"op": "set_field", "node": "summarise", "fields": {"system_prompt": "Be brief."}},
    ]
    assert _valid(operations_schema(BASE), ops)
    document, problems = apply_operations(BASE, ops)
    assert problems == []
    assert check_upload(document).valid, [d.format() for d in check_upload(document).errors]
    assert BASE["nodes"][0].get("system_prompt") is None  # the original is not changed
    diff = diff_documents(BASE, document)
    assert diff.nodes.added == ["judge"]
    assert diff.nodes.changed == {"summarise": ["system_prompt"]}
    assert diff.edges.added == ["tidy->judge", "judge->END"]
    assert diff.schemas.added == ["verdict"]
    assert "+ node judge" in diff.lines()


def test_each_operation_that_cannot_apply_is_a_config_problem_and_the_others_still_apply() -> None:
    ops: list[Any] = [
        {"op": "connect", "from": "tidy", "to": "nowhere"},
        {"op": "add_node", "id": "tidy", "type": "MERGE", "fields": {}},
        {"op": "set_field", "node": "tidy", "fields": {"system_prompt": "x"}},
        {"op": "disconnect", "from": "tidy", "to": "summarise"},
        {"op": "add_node", "id": "late", "type": "MERGE", "fields": {}},
        "not an operation",
    ]
    document, problems = apply_operations(BASE, ops)
    codes = [p.code for p in problems]
    assert codes == [
        "operation_unknown_node",
        "operation_duplicate_id",
        "operation_unknown_field",
        "operation_unknown_edge",
        "operation_shape",
    ]
    assert all(str(p.category) == "config" and p.hint for p in problems)
    assert problems[0].message.startswith("operation 1 (connect)")
    assert "nowhere" in problems[0].message
    assert [n["id"] for n in document["nodes"]] == ["summarise", "tidy", "late"]


def test_removing_a_node_drops_its_edges_and_null_unsets_a_field() -> None:
    document, problems = apply_operations(
        BASE,
        [
            {"op": "remove_node", "node": "tidy"},
            {"op": "set_field", "node": "summarise", "fields": {"label": None}},
        ],
    )
    assert problems == []
    assert document["edges"] == []
    assert [n["id"] for n in document["nodes"]] == ["summarise"]


def test_too_many_operations_are_cut_with_a_problem() -> None:
    ops = [{"op": "add_node", "id": f"n{i}", "type": "MERGE", "fields": {}} for i in range(MAX_OPERATIONS + 3)]
    document, problems = apply_operations({"id": "x"}, ops)
    assert len(document["nodes"]) == MAX_OPERATIONS
    assert [p.code for p in problems] == ["operation_too_many"]


_ANY = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def _drawn(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of the subset of JSON Schema the operations schema is written in."""
    if "anyOf" in schema:
        return st.one_of([_drawn(branch) for branch in schema["anyOf"]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", -100) + 1)
        return st.integers(min_value=int(low), max_value=int(schema.get("maximum", 100)))
    if kind == "string":
        taken = set(schema.get("not", {}).get("enum", []))
        return st.from_regex(r"\A[a-z_][a-z0-9_]{0,6}\Z").filter(lambda s: s not in taken)
    if kind == "array":
        return st.lists(_drawn(schema.get("items", {})), min_size=schema.get("minItems", 0), max_size=4)
    if kind == "object" and "properties" in schema:
        required = set(schema.get("required", []))
        props = schema["properties"]
        drawn = st.fixed_dictionaries(
            {k: _drawn(v) for k, v in props.items() if k in required},
            optional={k: _drawn(v) for k, v in props.items() if k not in required},
        )
        return drawn.filter(jsonschema.Draft202012Validator(schema).is_valid)  # bounds the sketch leaves out
    if kind == "object":
        return st.dictionaries(st.text(max_size=5), _ANY, max_size=3)
    return _ANY


@pytest.mark.parametrize("document", [{"id": "x"}, BASE], ids=["empty", "filled"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_whatever_the_schema_admits_applies_without_raising(document: dict[str, Any], data: st.DataObject) -> None:
    schema = operations_schema(document)
    ops = data.draw(_drawn(schema))
    assert _valid(schema, ops)
    patched, problems = apply_operations(document, ops)
    assert isinstance(patched["nodes"], list)
    assert all(str(p.category) == "config" and p.code.startswith("operation_") for p in problems)


def test_the_small_form_offers_only_typed_bounded_fields() -> None:
    """What a grammar-held small model answers under: nothing it can nest without end."""
    schema = operations_schema(BASE, small=True)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["maxItems"] == 8
    text = json.dumps(schema)
    assert '"tools"' not in text  # a nested model's field is not offered
    for branch in schema["items"]["anyOf"]:
        for value in branch["properties"].get("fields", {}).get("properties", {}).values():
            assert value != {}
    summarise = next(b for b in schema["items"]["anyOf"] if b["properties"].get("node") == {"enum": ["summarise"]})
    prompt = summarise["properties"]["fields"]["properties"]["system_prompt"]
    assert {"type": "string", "maxLength": 1000} in prompt["anyOf"]
