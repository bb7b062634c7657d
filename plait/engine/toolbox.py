"""The tools an LLM_CALL node offers the model: its inline tools and its MCP servers' tools, merged
(docs/tools.md), each bound to what carrying out a call means."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from plait.engine.contracts import schema_violations
from plait.engine.inline_tools import ToolContext, ToolFailed, run_tool, tool_spec
from plait.model.nodes import LlmCallNode
from plait.model.tools import McpServerRef
from plait.tools.mcp import McpFailure, McpImage, McpSessions


@dataclass(frozen=True, slots=True)
class ToolReply:
    """A tool's result with the images it returned (MCP), which a model that can see is shown."""

    value: Any
    images: tuple[McpImage, ...]


class ToolSetError(Exception):
    """The node's tools cannot be offered as configured (a name offered twice, an allowed tool the
    server does not list): the node fails before the model is called."""


@dataclass(frozen=True, slots=True)
class BoundTool:
    """One tool as the model is offered it, with what carrying out a call to it means."""

    spec: dict[str, Any]
    """The Chat Completions `tools` entry."""
    call: Callable[[dict[str, Any]], Awaitable[Any]]
    """Carries out a call: raises ToolFailed (the model is told) or McpFailure (the node fails)."""
    edge_id: str | None
    """The out-edge the result is routed to (`output_edge_id` / `output_edge_map`)."""
    source: str
    """`inline` or `mcp:<server id>` (recorded with each call)."""


async def toolbox(node: LlmCallNode, context: ToolContext, sessions: McpSessions | None) -> dict[str, BoundTool]:
    """The node's tools by name: its inline tools, then its MCP servers' tools. Raises ToolSetError
    when it uses MCP servers and none are available here, or when two tools share a name."""
    tools: dict[str, BoundTool] = {}
    for tool in node.tools:
        tools[tool.name] = BoundTool(tool_spec(tool), _inline(tool, context), tool.output_edge_id, "inline")
    for ref in node.mcp_servers:
        if sessions is None:
            raise ToolSetError("MCP servers are not available here (no [[mcp_servers]] configuration was given)")
        for name, bound in (await _mcp_tools(ref, sessions)).items():
            if name in tools:
                raise ToolSetError(
                    f"two tools are named '{name}' ({tools[name].source} and {bound.source}); the model could not "
                    "tell them apart: rename the inline tool or leave one out with `allowed_tools`"
                )
            tools[name] = bound
    return tools


def _inline(tool: Any, context: ToolContext) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    return lambda arguments: run_tool(tool, arguments, context)


async def _mcp_tools(ref: McpServerRef, sessions: McpSessions) -> dict[str, BoundTool]:
    listed = {tool.name: tool for tool in await sessions.list_tools(ref.server_id)}
    names = list(listed) if ref.allowed_tools is None else ref.allowed_tools
    missing = [n for n in [*names, *ref.output_edge_map] if n not in listed]
    if missing:
        raise ToolSetError(
            f"MCP server '{ref.server_id}' has no tool named {', '.join(repr(n) for n in missing)} "
            f"(it lists: {', '.join(listed) or 'no tools'}); fix allowed_tools / output_edge_map"
        )
    return {
        name: BoundTool(
            _mcp_spec(listed[name]),
            _mcp_call(sessions, ref.server_id, listed[name]),
            ref.output_edge_map.get(name),
            f"mcp:{ref.server_id}",
        )
        for name in names
    }


def _mcp_spec(tool: Any) -> dict[str, Any]:
    description = tool.description or tool.title or ""
    parameters = tool.input_schema or {"type": "object", "properties": {}}
    return {"type": "function", "function": {"name": tool.name, "description": description, "parameters": parameters}}


def _mcp_call(sessions: McpSessions, server_id: str, tool: Any) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    async def call(arguments: dict[str, Any]) -> Any:
        result = await sessions.call_tool(server_id, tool.name, arguments)
        if result.is_error:
            raise ToolFailed(f"the tool reported an error: {result.value}")
        if tool.output_schema is not None:
            await _check_output(sessions, server_id, tool, result.structured)
        return ToolReply(result.value, result.images) if result.images else result.value

    return call


async def _check_output(sessions: McpSessions, server_id: str, tool: Any, structured: Any) -> None:
    """A result against the tool's declared `outputSchema`, by Plait's validator (patterns on RE2)
    in a thread, so that neither a large result nor a hostile schema holds the event loop; a result
    that breaks it fails the node, as the server broke its own contract."""
    where = f"MCP server '{server_id}' tool '{tool.name}'"
    if structured is None:
        raise McpFailure(f"{where} declares an outputSchema but returned no structuredContent")
    limit = sessions.config(server_id).timeout_s
    try:
        problems = await asyncio.wait_for(asyncio.to_thread(schema_violations, tool.output_schema, structured), limit)
    except TimeoutError:
        raise McpFailure(
            f"{where}: checking its result against its outputSchema took longer than {limit:g} s"
        ) from None
    if problems:
        raise McpFailure(f"{where} returned structuredContent that breaks its outputSchema: {'; '.join(problems[:5])}")


__all__ = ["BoundTool", "McpFailure", "ToolReply", "ToolSetError", "toolbox"]
