"""docs/graph-format.md stays true: every field of every file-format type is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from plait.model import NODE_CLASSES, EdgeDef, GraphDef, McpPromptRef, McpResourceRef, McpServerRef, ToolDef
from plait.model.graph import SchemaEntry, SchemaMigration
from plait.model.nodes import NodeType, SkillScope, TemplateParam

DOC = (Path(__file__).resolve().parents[1] / "docs" / "graph-format.md").read_text()
TYPES: list[type[BaseModel]] = [
    GraphDef,
    EdgeDef,
    SchemaEntry,
    SchemaMigration,
    ToolDef,
    McpServerRef,
    McpResourceRef,
    McpPromptRef,
    TemplateParam,
    SkillScope,
    *NODE_CLASSES.values(),
]


@pytest.mark.parametrize("model", TYPES, ids=lambda m: m.__name__)
def test_every_field_is_documented(model: type[BaseModel]) -> None:
    for name, info in model.model_fields.items():
        public = info.alias or name
        assert re.search(rf"`{re.escape(public)}`|\b{re.escape(public)}:", DOC), f"{model.__name__}.{public}"


def test_every_node_type_has_a_section() -> None:
    for node_type in NodeType:
        assert str(node_type) in DOC


CONFIG_DOC = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()


def test_every_plait_toml_key_is_documented() -> None:
    from plait.config import (
        Capability,
        JsonMode,
        McpServerConfig,
        ModelConfig,
        PlaitConfig,
        ProviderConfig,
        SandboxConfig,
        Tokenizer,
    )

    keys = [
        *ProviderConfig.model_fields,
        *ModelConfig.model_fields,
        *(k for k in PlaitConfig.model_fields if k != "source"),
        *(f"mcp_servers[].{k}" for k in McpServerConfig.model_fields),
    ]
    for key in keys:
        documented = (f"`{key}`", f"{key}[]", f"`providers[].{key}`", f"`[{key}]`")
        assert any(form in CONFIG_DOC for form in documented), key
    for key in SandboxConfig.model_fields:  # a table's keys appear in its example
        assert f"\n{key} = " in CONFIG_DOC, f"sandbox.{key}"
    for value in (*Capability, *JsonMode, *Tokenizer):
        assert f"`{value}`" in CONFIG_DOC, value
