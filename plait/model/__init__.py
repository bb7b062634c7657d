"""Graph and run types: `GraphDef` is the file format of a graph.

The names below are loaded on first use, so that importing one cheap type (an enum, a limit)
does not build every pydantic model of the graph format: a CLI command that only reads the
store never loads them (docs/performance.md, "CLI start-up").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plait.model.common import Position
    from plait.model.enums import FreezePolicy, SourceType
    from plait.model.graph import EdgeDef, GraphDef, SchemaEntry, SchemaMigration
    from plait.model.nodes import (
        NODE_CLASSES,
        CodeNode,
        ConditionNode,
        HumanReviewNode,
        LlmCallNode,
        LoopNode,
        MapNode,
        MergeNode,
        NodeBase,
        NodeDef,
        NodeType,
        SkillNode,
        SubgraphNode,
        TemplateParam,
        ToolNode,
        TransformNode,
        WaitNode,
    )
    from plait.model.tools import McpPromptRef, McpResourceRef, McpServerRef, ToolDef, ToolHandler

_HOME: dict[str, str] = {
    "FreezePolicy": "plait.model.enums",
    "Position": "plait.model.common",
    "SourceType": "plait.model.enums",
    "EdgeDef": "plait.model.graph",
    "GraphDef": "plait.model.graph",
    "SchemaEntry": "plait.model.graph",
    "SchemaMigration": "plait.model.graph",
    "NODE_CLASSES": "plait.model.nodes",
    "CodeNode": "plait.model.nodes",
    "ConditionNode": "plait.model.nodes",
    "HumanReviewNode": "plait.model.nodes",
    "LlmCallNode": "plait.model.nodes",
    "LoopNode": "plait.model.nodes",
    "MapNode": "plait.model.nodes",
    "MergeNode": "plait.model.nodes",
    "NodeBase": "plait.model.nodes",
    "NodeDef": "plait.model.nodes",
    "NodeType": "plait.model.nodes",
    "SkillNode": "plait.model.nodes",
    "SubgraphNode": "plait.model.nodes",
    "TemplateParam": "plait.model.nodes",
    "ToolNode": "plait.model.nodes",
    "TransformNode": "plait.model.nodes",
    "WaitNode": "plait.model.nodes",
    "McpPromptRef": "plait.model.tools",
    "McpResourceRef": "plait.model.tools",
    "McpServerRef": "plait.model.tools",
    "ToolDef": "plait.model.tools",
    "ToolHandler": "plait.model.tools",
}
"""Where each public name is defined."""

__all__ = [
    "NODE_CLASSES",
    "CodeNode",
    "ConditionNode",
    "EdgeDef",
    "FreezePolicy",
    "GraphDef",
    "HumanReviewNode",
    "LlmCallNode",
    "LoopNode",
    "MapNode",
    "McpPromptRef",
    "McpResourceRef",
    "McpServerRef",
    "MergeNode",
    "NodeBase",
    "NodeDef",
    "NodeType",
    "Position",
    "SchemaEntry",
    "SchemaMigration",
    "SkillNode",
    "SourceType",
    "SubgraphNode",
    "TemplateParam",
    "ToolDef",
    "ToolHandler",
    "ToolNode",
    "TransformNode",
    "WaitNode",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'plait.model' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
