"""Inline tools of an LLM_CALL node (docs/tools.md): what the model is offered, and what a call does.

- `CONTEXT_WRITE`: the call's arguments are the result (written to the run through the tool's
  out-edge, when it has one);
- `TRANSFORM_EXPR`: `transform_expr` runs in the JavaScript sandbox with `args` (the call's
  arguments), `input` and `nodes` in scope; its value is the result;
- `WORKFLOW_TASK`: a sub-run of another stored graph (`graph`) with the arguments as its input;
  the sub-run's output is the result.

A tool whose call fails (bad arguments, a throwing expression, a failed sub-run) answers the
model with `{"error": ...}` instead: the model may correct itself in the next round.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from plait.engine.contracts import schema_violations
from plait.engine.ports import SubRun
from plait.model.tools import ToolDef, ToolHandler
from plait.sandbox import SandboxError


class ToolFailed(Exception):
    """A call could not be carried out; the message goes back to the model."""


async def no_sub_runs(ref: str, run_input: dict[str, Any]) -> Any:
    """The sub-runs of a runtime that belongs to no engine: refused."""
    raise ToolFailed("sub-runs are not available here")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What handlers may use: the run's data for expressions, the sandbox, sub-runs."""

    input: Any
    nodes: dict[str, Any]
    evaluate: Callable[[str, dict[str, Any]], Awaitable[Any]]
    sub_run: SubRun | None


def tool_spec(tool: ToolDef) -> dict[str, Any]:
    """The OpenAI Chat Completions `tools` entry for an inline tool."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
    }


async def run_tool(tool: ToolDef, arguments: dict[str, Any], context: ToolContext) -> Any:
    """Carry out one call; raise ToolFailed with what the model should be told."""
    problems = schema_violations(tool.parameters, arguments)
    if problems:
        raise ToolFailed(f"the arguments do not match the tool's parameters: {'; '.join(problems[:5])}")
    if tool.handler == ToolHandler.CONTEXT_WRITE:
        return arguments
    if tool.handler == ToolHandler.TRANSFORM_EXPR:
        scope = {"args": arguments, "input": context.input, "nodes": context.nodes}
        try:
            return await context.evaluate(tool.transform_expr or "null", scope)
        except SandboxError as exc:
            raise ToolFailed(f"the tool's expression failed: {exc}") from None
    try:
        return await (context.sub_run or no_sub_runs)(tool.graph or "", arguments)
    except ToolFailed:
        raise
    except Exception as exc:  # the sub-run's own error, reported to the model
        raise ToolFailed(f"the sub-run of '{tool.graph}' failed: {exc}") from None
