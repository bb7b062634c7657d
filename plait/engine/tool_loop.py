"""The tool loop of an LLM_CALL node (docs/tools.md).

Up to `max_tool_rounds` rounds of: call the model with the node's tools → carry out the tool
calls it makes → append them and their results (`role: tool`) to the conversation → call
again. The rounds stop early when the model answers without calling a tool. The caller then
makes the final call without tools and with the node's `response_format` (validated and
retried as any answer), unless the answer given during the rounds is already valid.

`tool_choice` is sent in the first round (`required` or a named function forces a call);
later rounds let the model decide, so that a forced choice cannot loop. A tool with an
`output_edge_id` (inline) or an `output_edge_map` entry (MCP) sends its result down that
out-edge, checked against the edge's schema. The tools come from `plait.engine.toolbox`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from plait.engine.contracts import schema_violations
from plait.engine.inline_tools import ToolFailed
from plait.engine.toolbox import BoundTool, ToolReply
from plait.llm.types import ChatRequest, ChatResponse
from plait.model.nodes import LlmCallNode
from plait.tools.mcp import McpImage

Call = Callable[[ChatRequest], Awaitable[ChatResponse]]


class RoutedResultInvalid(Exception):
    """A tool's result breaks the schema of the out-edge it is routed to (the node fails)."""

    def __init__(self, tool: str, edge_id: str, problems: list[str]):
        super().__init__(f"tool '{tool}' returned data that does not match edge '{edge_id}''s schema")
        self.details = problems


@dataclass
class ToolRounds:
    """What a node's tool rounds leave for its final call: the conversation, the calls made, the
    results routed to out-edges, and an answer the model gave without calling a tool."""

    messages: list[dict[str, Any]]
    """The conversation after the rounds: the final call continues it."""
    rounds: list[dict[str, Any]] = field(default_factory=list)
    """Per round: the tool calls and their results (recorded in the node's snapshot)."""
    routed: dict[str, Any] = field(default_factory=dict)
    """Out-edge id -> the latest result of the tool routed to it."""
    answer: ChatResponse | None = None
    """An answer without tool calls given during the rounds."""


def offers_tools(node: LlmCallNode) -> bool:
    """Whether the model is offered tools: the node has inline tools or MCP servers, its
    `tool_choice` is not `none`, and `max_tool_rounds` allows a round."""
    return bool(node.tools or node.mcp_servers) and node.tool_choice != "none" and node.max_tool_rounds > 0


async def tool_rounds(
    node: LlmCallNode,
    request: ChatRequest,
    tools: dict[str, BoundTool],
    call: Call,
    edge_schemas: dict[str, Any],
    *,
    vision: bool = False,
) -> ToolRounds:
    """Run the rounds; `edge_schemas`: out-edge id -> JSON Schema, for routed results. `vision`: the
    model can see images, so those tools return follow their results (else their text describes them)."""
    specs = [t.spec for t in tools.values()]
    done = ToolRounds(list(request.messages))
    for number in range(1, node.max_tool_rounds + 1):
        choice = _choice(node.tool_choice) if number == 1 else "auto"
        ask = replace(request, messages=list(done.messages), tools=specs, tool_choice=choice)
        ask = replace(ask, response_format=None)
        response = await call(ask)
        if not response.tool_calls:
            done.answer = response
            return done
        done.messages.append(
            {
                "role": "assistant",
                "content": response.content or "",  # llama.cpp's server refuses null here (HTTP 500)
                "tool_calls": [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in response.tool_calls
                ],
            }
        )
        record: dict[str, Any] = {"round": number, "calls": []}
        shown: list[tuple[str, McpImage]] = []
        for tool_call in response.tool_calls:
            result = await _carry_out(tools, tool_call.name, tool_call.arguments, done, edge_schemas)
            if isinstance(result, ToolReply):
                shown.extend((tool_call.name, image) for image in result.images)
                result = result.value
            source = tools[tool_call.name].source if tool_call.name in tools else None
            record["calls"].append(
                {"tool": tool_call.name, "source": source, "arguments": tool_call.arguments, "result": result}
            )
            content = json.dumps(result, ensure_ascii=False)
            done.messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": content})
        if shown and vision:
            done.messages.append(_images_message(shown))
            record["images_shown"] = [f"{name}: {image.label}" for name, image in shown]
        done.rounds.append(record)
    return done


async def _carry_out(
    tools: dict[str, BoundTool], name: str, arguments: dict[str, Any], done: ToolRounds, edge_schemas: dict[str, Any]
) -> Any:
    tool = tools.get(name)
    if tool is None:
        return {"error": f"there is no tool named '{name}'; the tools are: {', '.join(tools)}"}
    try:
        result = await tool.call(arguments)
    except ToolFailed as exc:
        return {"error": str(exc)}
    if tool.edge_id is not None:
        schema = edge_schemas.get(tool.edge_id)
        problems = schema_violations(schema, result) if schema is not None else []
        if problems:
            raise RoutedResultInvalid(name, tool.edge_id, problems)
        done.routed[tool.edge_id] = result
    return result


def _images_message(shown: list[tuple[str, McpImage]]) -> dict[str, Any]:
    """The images of a round's tool results, as a user message (Chat Completions' tool messages
    hold text only); the node's records keep their labels, never their bytes."""
    parts: list[dict[str, Any]] = [{"type": "text", "text": "The images the tools returned:"}]
    for name, image in shown:
        parts.append({"type": "text", "text": f"{image.label} from {name}"})
        parts.append({"type": "image_url", "image_url": {"url": image.data_url()}})
    return {"role": "user", "content": parts}


def _choice(choice: Any) -> Any:
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        return choice
    return choice.model_dump(mode="json")
