"""What an LLM_CALL node takes from MCP servers before its first call (docs/tools.md):
resources read (`mcp_resources`, URIs rendered with the node's names) and the prompt got from a
server (`mcp_prompt`, replacing `system_prompt` / `user_prompt_tpl`).

Resources are injected as the node says: appended to the system prompt (`system_context`), to
the user prompt (`user_context`), or put in the node's context under `field_name`
(`context_field`), where its templates (and the `mcp_prompt` arguments) can refer to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plait.engine.render import NodeView
from plait.model.nodes import LlmCallNode
from plait.model.tools import InjectAs
from plait.tools.mcp import McpSessions


@dataclass
class McpInputs:
    """What an LLM_CALL node took from MCP servers before its first call, ready for its prompts."""

    fields: dict[str, str] = field(default_factory=dict)
    """`context_field` resources by field name."""
    system: list[str] = field(default_factory=list)
    user: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] | None = None
    """The messages of `mcp_prompt` (None: the node renders its own prompts)."""
    record: dict[str, Any] = field(default_factory=dict)
    """What was read, for the node run's snapshot (`mcp`)."""

    def inject(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`messages` with the system and user context resources appended."""
        messages = [dict(m) for m in messages]
        if self.system:
            extra = "\n\n".join(self.system)
            if messages and messages[0]["role"] == "system":
                messages[0]["content"] = f"{messages[0]['content']}\n\n{extra}"
            else:
                messages.insert(0, {"role": "system", "content": extra})
        if self.user:
            extra = "\n\n".join(self.user)
            last = next((m for m in reversed(messages) if m["role"] == "user"), None)
            if last is not None:
                last["content"] = f"{last['content']}\n\n{extra}"
            else:
                messages.append({"role": "user", "content": extra})
        return messages


def uses_mcp_inputs(node: LlmCallNode) -> bool:
    """Whether the node reads MCP resources or takes its prompt from an MCP server before its first call."""
    return bool(node.mcp_resources) or node.mcp_prompt is not None


async def gather(node: LlmCallNode, view: NodeView, sessions: McpSessions) -> McpInputs:
    """Read the node's resources and get its prompt; raises McpFailure (the node fails)."""
    inputs = McpInputs()
    names = dict(view.names)
    resources: list[dict[str, Any]] = []
    for ref in node.mcp_resources:
        uri = await view.arender(ref.uri, names=names)
        text = await sessions.read_resource(ref.server_id, uri)
        resources.append({"server_id": ref.server_id, "uri": uri, "inject_as": str(ref.inject_as), "chars": len(text)})
        if ref.inject_as is InjectAs.CONTEXT_FIELD:
            assert ref.field_name is not None  # the model requires it
            inputs.fields[ref.field_name] = text
            names[ref.field_name] = text
        elif ref.inject_as is InjectAs.SYSTEM_CONTEXT:
            inputs.system.append(text)
        else:
            inputs.user.append(text)
    if resources:
        inputs.record["resources"] = resources
    prompt = node.mcp_prompt
    if prompt is not None:
        arguments = {key: await view.arender(value, names=names) for key, value in prompt.arguments.items()}
        inputs.messages = await sessions.get_prompt(prompt.server_id, prompt.prompt_name, arguments)
        inputs.record["prompt"] = {"server_id": prompt.server_id, "name": prompt.prompt_name, "arguments": arguments}
    return inputs
