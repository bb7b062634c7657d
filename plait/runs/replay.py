"""`plait replay NODE_RUN_ID`: send a node run's recorded request again and compare.

The request is rebuilt from the node run's input snapshot alone (the rendered prompts,
`response_format`, role, model, temperature, max_tokens), so what is sent is what the node sent
on its first attempt, whatever the graph, the templates or the upstream outputs are now. The
new answer is checked against the recorded `response_format` schema; nothing is stored.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, replace
from typing import Any

from plait.engine.contracts import schema_violations
from plait.engine.render import cut_for_the_record
from plait.errors import PlaitError, Refusal
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, response_schema
from plait.model.output_meta import strip_meta
from plait.redact import redact_secrets
from plait.store import NodeRunRecord


class ReplayError(PlaitError):
    """The node run cannot be replayed (not an LLM call, no snapshot)."""

    kind = Refusal.INVALID
    code = "replay_refused"


@dataclass(frozen=True, slots=True)
class Replay:
    """A recorded answer and a new answer to the same request, with the new one's cost, its
    schema violations and a text diff of the two."""

    node_run_id: str
    stored: Any
    new: Any
    provider: str
    model: str
    tokens_input: int
    tokens_output: int
    cost_usd: float
    violations: list[str]
    diff: str


def recorded_request(record: NodeRunRecord) -> ChatRequest:
    """The request the node run sent, rebuilt from its input snapshot alone; ReplayError when
    the node run is no recorded model call."""
    snapshot = record.input_snapshot or {}
    # LLM_CALLs, and CONDITIONs decided by a model (`condition_llm`), record their request alike
    if snapshot.get("node_type") not in ("LLM_CALL", "CONDITION") or "rendered_user_prompt" not in snapshot:
        raise ReplayError(f"node run {record.id} ({record.node_id}) is not a recorded model call: nothing to replay")
    prompts = [str(snapshot.get(k) or "") for k in ("rendered_system_prompt", "rendered_user_prompt")]
    if any(cut_for_the_record(prompt) for prompt in prompts):
        raise ReplayError(
            f"node run {record.id} ({record.node_id}) sent a prompt too long to keep whole in its record: "
            "the record holds its beginning only, so the call cannot be replayed as it was sent"
        )
    config = snapshot.get("model_config") or {}
    messages = [{"role": "user", "content": snapshot["rendered_user_prompt"]}]
    if snapshot.get("rendered_system_prompt"):
        messages.insert(0, {"role": "system", "content": snapshot["rendered_system_prompt"]})
    if snapshot.get("messages"):  # a prompt got from an MCP server (`mcp_prompt`): every message as sent
        messages = list(snapshot["messages"])
    return ChatRequest(
        node_id=record.node_id,
        messages=messages,
        model_role=config.get("role") or "chat",
        model=config.get("model"),
        response_format=snapshot.get("response_format"),
        temperature=config.get("temperature"),
        max_tokens=config.get("max_tokens"),
    )


async def replay(record: NodeRunRecord, provider: Provider, model: str | None = None, roles: Any = ()) -> Replay:
    """Send the recorded request (to another role or model with `model`) and compare the answers."""
    request = recorded_request(record)
    if model is not None:
        request = replace(request, model_role=model, model=None) if model in roles else replace(request, model=model)
    response = await provider.complete(request)
    new = redact_secrets(_value(response.content))  # a model asked to repeat a key must not return it
    schema = response_schema(request.response_format)
    violations = schema_violations(schema, new) if schema is not None else []
    stored = strip_meta(record.output)
    return Replay(
        node_run_id=record.id,
        stored=stored,
        new=new,
        provider=response.provider,
        model=response.model,
        tokens_input=response.usage.input_tokens,
        tokens_output=response.usage.output_tokens,
        cost_usd=response.cost_usd,
        violations=violations,
        diff=_diff(stored, new),
    )


def _value(content: str | None) -> Any:
    try:
        return json.loads(content or "")
    except json.JSONDecodeError:
        return content


def _diff(stored: Any, new: Any) -> str:
    def lines(value: Any) -> list[str]:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True).splitlines(keepends=True)

    return "".join(difflib.unified_diff(lines(stored), lines(new), "stored", "replayed"))
