"""One model call of a node, as every caller in the engine makes it: an LLM_CALL's attempts, its
judge, a CONDITION's question, and the repair model diagnosing any node's failure. Each call is
an attempt of the node run (what it answered or the error, how long it took) and adds its usage
to the node run's, so a node's tokens and cost cover every call made for it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from plait.engine.runtime import Runtime
from plait.engine.state import RunState
from plait.llm.provider import Provider
from plait.llm.slots import count_call, hand_over
from plait.llm.types import ChatRequest, ChatResponse, ProviderError


def new_usage() -> dict[str, Any]:
    """Zero tokens and cost, as the keyword arguments `NodeResult.completed` and `failed` take."""
    return {"tokens_input": 0, "tokens_output": 0, "cost_usd": 0.0}


def new_attempt(attempts: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A new attempt record appended to `attempts` (`extra` marks it: `judge`, `repair`, ...)."""
    record: dict[str, Any] = {"attempt": len(attempts) + 1, "started_at": time.time(), **extra}
    attempts.append(record)
    return record


async def model_call(
    rt: Runtime,
    state: RunState,
    request: ChatRequest,
    estimate: float,
    usage: dict[str, Any],
    record: dict[str, Any],
) -> ChatResponse:
    """One model call of a node: its estimated cost is reserved against `max_cost_usd` while it
    runs; the call (answer or error) is recorded on `record` and its usage added to `usage`."""
    if state.stopping:  # the run is being stopped: a call not made yet is not made
        raise asyncio.CancelledError
    task = asyncio.current_task()
    if task is not None:
        state.answered.discard(task)
    started = record["started_at"]
    state.reserved_usd += estimate
    try:
        response = await _call(rt, request)
    except (ProviderError, TimeoutError) as exc:
        kind = exc.kind if isinstance(exc, ProviderError) else "timeout"
        record.update(error=str(exc) or kind, kind=kind, duration_ms=_ms(started))
        if isinstance(exc, ProviderError) and exc.decisions:
            record["decisions"] = exc.decisions
        raise
    finally:
        state.reserved_usd -= estimate
    if task is not None:  # a paid answer in hand: a stopping run lets this node record it
        state.answered.add(task)
    usage["tokens_input"] += response.usage.input_tokens
    usage["tokens_output"] += response.usage.output_tokens
    usage["cost_usd"] += response.cost_usd
    record.update(
        content=response.content,
        model=response.model,
        provider=response.provider,
        usage={"input": response.usage.input_tokens, "output": response.usage.output_tokens},
        duration_ms=_ms(started),
    )
    if response.decisions:
        record["decisions"] = response.decisions
    return response


def stopped_call(
    rt: Runtime, request: ChatRequest, text: str, problems: list[str], usage: dict[str, Any], record: dict[str, Any]
) -> None:
    """Record a call the node stopped mid-answer (a field broke its contract): what was written
    and why. The provider reports no usage for a call cut short, so its tokens are counted here
    (`usage_estimated`); its cost is not known."""
    counter = rt.counter(request.model_role, request.model)
    prompt = sum(counter.count(str(m.get("content") or "")) for m in request.messages)
    written = counter.count(text)
    usage["tokens_input"] += prompt
    usage["tokens_output"] += written
    record.update(
        content=text,
        kind="schema",
        violations=problems,
        stopped=True,
        usage={"input": prompt, "output": written},
        usage_estimated=True,
        duration_ms=_ms(record["started_at"]),
    )


async def _call(rt: Runtime, request: ChatRequest) -> ChatResponse:
    assert rt.provider is not None
    count_call(1)  # while it is in flight, the continuations of commits wait their turn (`slots.paced`)
    try:
        if rt.llm_slots is None:
            return await _complete(rt.provider, request)
        async with rt.llm_slots:
            response = await _complete(rt.provider, request)
    finally:
        count_call(-1)
    await hand_over()
    return response


async def _complete(provider: Provider, request: ChatRequest) -> ChatResponse:
    if request.timeout_s:
        return await asyncio.wait_for(provider.complete(request), request.timeout_s)
    return await provider.complete(request)


def _ms(started: float) -> float:
    return round((time.time() - started) * 1000, 3)
