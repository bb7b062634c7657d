"""Tool and MCP references of an LLM_CALL node."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from plait.model.common import JsonObject, NonEmptyStr, PlaitModel

ToolName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]


class ToolHandler(StrEnum):
    """What a call of an inline tool does: its arguments are the result, a JavaScript expression
    over them is, or a sub-run of another graph with them as input."""

    CONTEXT_WRITE = "CONTEXT_WRITE"
    WORKFLOW_TASK = "WORKFLOW_TASK"
    TRANSFORM_EXPR = "TRANSFORM_EXPR"


class ToolDef(PlaitModel):
    """An inline tool. `handler` decides what a call does; `output_edge_id` routes its result."""

    name: ToolName
    description: str = ""
    parameters: JsonObject = Field(default_factory=lambda: {"type": "object", "properties": {}})
    handler: ToolHandler
    output_edge_id: str | None = None
    transform_expr: str | None = None
    """JS over the call arguments, for handler TRANSFORM_EXPR."""
    graph: str | None = None
    """Stored graph id (or graph file) started as a sub-run, for handler WORKFLOW_TASK."""


class FunctionChoice(PlaitModel):
    """The one tool a `tool_choice` forces the model to call."""

    name: ToolName


class ToolChoiceFunction(PlaitModel):
    """A `tool_choice` that forces a call of one named tool."""

    type: Literal["function"] = "function"
    function: FunctionChoice


ToolChoice = Literal["auto", "none", "required"] | ToolChoiceFunction


class McpServerRef(PlaitModel):
    """The tools of one configured MCP server a node may call, and where their results go."""

    server_id: NonEmptyStr
    allowed_tools: list[str] | None = None
    """None exposes every tool the server lists."""
    output_edge_map: dict[str, str] = Field(default_factory=dict)
    """tool name -> out-edge id whose schema validates that tool's result."""


class InjectAs(StrEnum):
    """Where an MCP resource's content goes in a node's prompt or context."""

    SYSTEM_CONTEXT = "system_context"
    USER_CONTEXT = "user_context"
    CONTEXT_FIELD = "context_field"


class McpResourceRef(PlaitModel):
    """An MCP resource read before the node's first model call; `field_name` exactly when
    `inject_as` is `context_field`."""

    server_id: NonEmptyStr
    uri: NonEmptyStr
    """May contain template references (`%input.doc%`)."""
    inject_as: InjectAs = InjectAs.USER_CONTEXT
    field_name: str | None = None

    @model_validator(mode="after")
    def _field_name_iff_context_field(self) -> McpResourceRef:
        if self.inject_as is InjectAs.CONTEXT_FIELD and not self.field_name:
            raise ValueError("field_name is required when inject_as is 'context_field'")
        if self.inject_as is not InjectAs.CONTEXT_FIELD and self.field_name:
            raise ValueError("field_name is only used when inject_as is 'context_field'")
        return self


class McpPromptRef(PlaitModel):
    """An MCP server's prompt used as the node's prompt."""

    server_id: NonEmptyStr
    prompt_name: NonEmptyStr
    arguments: dict[str, str] = Field(default_factory=dict)
    """Values may contain template references."""
