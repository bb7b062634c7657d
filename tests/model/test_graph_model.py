"""The file-format types used directly from Python (the `import plait` surface)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from plait.model import (
    EdgeDef,
    GraphDef,
    LlmCallNode,
    McpResourceRef,
    NodeDef,
    SchemaEntry,
    SchemaMigration,
    TemplateParam,
    ToolDef,
    WaitNode,
)
from plait.model.nodes import node_types_with_field

nodes: TypeAdapter[Any] = TypeAdapter(NodeDef)


def test_discriminated_union_picks_the_class_by_type() -> None:
    node = nodes.validate_python({"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "hi"})
    assert isinstance(node, LlmCallNode)
    assert node.model_role == "chat"
    assert node.max_tool_rounds == 5
    assert node.fewshot_max_count == 3


def test_a_field_of_another_type_is_rejected() -> None:
    with pytest.raises(ValidationError, match="condition_expr"):
        nodes.validate_python({"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "x", "condition_expr": "true"})
    assert [str(t) for t in node_types_with_field("condition_expr")] == ["CONDITION"]
    assert {str(t) for t in node_types_with_field("graph")} == {"SUBGRAPH", "MAP", "LOOP"}


def test_llm_call_needs_exactly_one_prompt_source() -> None:
    with pytest.raises(ValidationError, match="needs a prompt"):
        LlmCallNode(id="a")
    with pytest.raises(ValidationError, match="not both"):
        LlmCallNode(id="a", user_prompt_tpl="x", prompt_script="tpl_1")
    assert LlmCallNode(id="a", prompt_script={"code": "async function main() { return 'x' }"}).prompt_script


def test_wait_needs_exactly_one_of_delay_and_until() -> None:
    assert WaitNode(id="w", delay_s=1.5).delay_s == 1.5
    with pytest.raises(ValidationError, match="exactly one"):
        WaitNode(id="w")
    with pytest.raises(ValidationError, match="exactly one"):
        WaitNode(id="w", delay_s=1, until="2030-01-01T00:00:00Z")


def test_template_params_input_and_reference() -> None:
    assert TemplateParam(name="role", value="architect").type == "input"
    ref = TemplateParam.model_validate({"name": "a", "type": "reference", "referenceNode": "n.analysis"})
    assert ref.reference_node == "n.analysis"
    with pytest.raises(ValidationError, match="needs reference_node"):
        TemplateParam(name="a", type="reference")


def test_mcp_resource_field_name_only_for_context_field() -> None:
    assert McpResourceRef(server_id="fs", uri="file:///x", inject_as="context_field", field_name="doc")
    with pytest.raises(ValidationError, match="field_name is required"):
        McpResourceRef(server_id="fs", uri="file:///x", inject_as="context_field")
    with pytest.raises(ValidationError, match="only used"):
        McpResourceRef(server_id="fs", uri="file:///x", field_name="doc")


def test_tool_needs_a_handler_and_tool_choice_forms() -> None:
    with pytest.raises(ValidationError, match="handler"):
        ToolDef(name="x")
    node = LlmCallNode(
        id="a",
        user_prompt_tpl="x",
        tools=[ToolDef(name="extract_clip_points", handler="CONTEXT_WRITE")],
        tool_choice={"type": "function", "function": {"name": "extract_clip_points"}},
    )
    assert node.tools[0].parameters == {"type": "object", "properties": {}}
    assert LlmCallNode(id="a", user_prompt_tpl="x", tool_choice="auto").tool_choice == "auto"


def test_semver_and_version_patterns() -> None:
    assert SchemaEntry(id="s", version="2.10.0", schema={}).version == "2.10.0"
    with pytest.raises(ValidationError, match="semantic version"):
        SchemaEntry(id="s", version="1.0", schema={})
    assert SchemaMigration(schema_id="s", from_version="1.x.x", to_version="2.0.0", migrate_expr="o => o")
    with pytest.raises(ValidationError, match="version pattern"):
        SchemaMigration(schema_id="s", from_version="1.*", to_version="2.0.0", migrate_expr="o => o")


def test_edge_aliases_and_condition_key_normalisation() -> None:
    short = EdgeDef.model_validate({"source": "a", "target": "b", "condition_key": True})
    long = EdgeDef.model_validate({"source_node_id": "a", "target_node_id": "b", "condition_key": "true"})
    assert short == long
    assert short.condition_key == "true"


def test_graph_accepts_schema_registry_alias_and_dumps_the_schema_key() -> None:
    graph = GraphDef.model_validate({"id": "g", "schema_registry": [{"id": "s", "schema": {"type": "object"}}]})
    assert graph.schemas[0].schema_ == {"type": "object"}
    assert graph.model_dump(by_alias=True)["schemas"][0]["schema"] == {"type": "object"}
    assert graph.display_name == "g"


def test_ids_must_be_identifiers() -> None:
    with pytest.raises(ValidationError):
        nodes.validate_python({"id": "has.dot", "type": "MERGE"})
    with pytest.raises(ValidationError):
        nodes.validate_python({"id": "has-dash", "type": "MERGE"})
