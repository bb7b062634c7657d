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


def test_every_key_of_a_scripted_answers_file_is_documented() -> None:
    from plait.llm.scripted import ScriptedResponse, ScriptFile

    testing = (Path(__file__).resolve().parents[1] / "docs" / "testing.md").read_text()
    section = testing.split("### The scripted answers file", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)` \|", section, re.MULTILINE))
    assert documented == set(ScriptedResponse.model_fields), "the table of docs/testing.md and the model differ"
    assert set(ScriptFile.model_fields) <= {"responses", "log"}
    for key in ScriptedResponse.model_fields:
        assert re.search(rf"^\s+(?:- )?{key}:", section, re.MULTILINE), f"the example does not show `{key}`"


def test_the_documented_scripted_answers_file_loads(tmp_path: Path) -> None:
    from plait.llm.scripted import load_script

    testing = (Path(__file__).resolve().parents[1] / "docs" / "testing.md").read_text()
    section = testing.split("### The scripted answers file", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "answers.yaml").write_text(example)
    responses = load_script(tmp_path / "answers.yaml").responses
    assert len(responses) == 6
    assert responses[-1].finish == "length"  # an answer cut at the token limit
