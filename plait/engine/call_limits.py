"""The two limits an LLM_CALL's model call stops at: the run's cost budget, before the call is
sent, and the token limit, while the answer is written. Each failure says which limit and how to
raise it."""

from __future__ import annotations

from typing import Any

from plait.engine.runtime import NodeResult
from plait.engine.state import RunState
from plait.llm.types import ChatRequest, ChatResponse
from plait.model.nodes import LlmCallNode


def cut_at_token_limit(
    node: LlmCallNode,
    request: ChatRequest,
    response: ChatResponse,
    snapshot: dict[str, Any],
    attempts: list[dict[str, Any]],
    usage: dict[str, Any],
) -> NodeResult:
    """The node failed because the model stopped at the token limit: the answer is incomplete,
    and asking again would stop at the same place."""
    limit = request.max_tokens or response.limit
    if request.max_tokens:
        said = f"max_tokens {limit}"
    elif limit:
        said = f"{limit}, the model's default"
    else:
        said = "the model server's own limit"
    message = (
        f"the answer was cut at the token limit ({said}) after {response.usage.output_tokens} tokens, before it "
        "was complete; asked again, it would be cut the same way"
    )
    raise_it = f"raise max_tokens_override of node '{node.id}'" + (f" above {limit}" if limit else "")
    hint = f"{raise_it}, or ask for a shorter answer (maxLength, maxItems in the edge's schema, a shorter prompt)"
    return NodeResult.failed(
        snapshot, attempts, kind="truncated", message=message, hint=hint, last_output=response.content, **usage
    )


def over_budget(state: RunState, estimate: float, spent_here: float) -> str | None:
    """Why a call estimated at `estimate` may not be sent under the run's `max_cost_usd`, or None."""
    limit = state.compiled.graph.max_cost_usd
    if limit is None:
        return None
    total = state.spent_usd + state.reserved_usd + spent_here + estimate
    if total <= limit:
        return None
    return (
        f"the run's budget max_cost_usd = {limit} would be exceeded: spent ${state.spent_usd + spent_here:.6f}, "
        f"${state.reserved_usd:.6f} in flight, this call ~${estimate:.6f}; raise max_cost_usd or use a cheaper model"
    )
