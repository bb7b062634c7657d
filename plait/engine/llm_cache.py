"""The response cache around an LLM_CALL: answer from it, or say what to remember.

A node an explicit rerun queued (`plait rerun`, unless `--cache`) is never answered from it; its
fresh answer replaces the one remembered, so later identical requests get what the person asked for.
A hit is validated like a fresh answer (so a cached answer never bypasses the contract), costs
nothing, and records the node run whose call produced it. A fresh answer is remembered only
once it is valid, and only under the key of the provider and model that really served it (after
a failover, the first target's key would name another model).
"""

from __future__ import annotations

import time
from typing import Any

from plait.engine.contracts import OutputContract
from plait.engine.runtime import CacheEntry, NodeResult, Runtime
from plait.engine.state import RunState
from plait.llm.cache import cache_key, identity_of, stored_answer
from plait.llm.types import ChatRequest, ChatResponse
from plait.model.nodes import LlmCallNode


class CacheSlot:
    """Where a request's answer is (or would be) in the cache; None when it is not cached."""

    def __init__(self, key: str, identity: str, *, fresh: bool = False):
        self.key = key
        self.identity = identity
        self.fresh = fresh
        """Asked afresh (an explicit rerun): never answered from the cache, but its answer is remembered."""

    @classmethod
    def of(cls, node: LlmCallNode, request: ChatRequest, rt: Runtime, state: RunState) -> CacheSlot | None:
        if rt.cache is None or not node.cache:
            return None
        identity = identity_of(rt.provider, request)
        return cls(cache_key(identity, request), identity, fresh=_asked_fresh(node, state)) if identity else None

    def answer(self, rt: Runtime, contract: OutputContract, snapshot: dict[str, Any]) -> NodeResult | None:
        """A completed result from the cache, or None (asked afresh, a miss, or a stored answer no
        longer valid)."""
        assert rt.cache is not None
        if self.fresh:
            return None
        hit = rt.cache.get(self.key)
        if hit is None:
            return None
        content = hit.response.get("content")
        value, problems = contract.parse(content)
        if problems:
            return None
        attempt = {
            "attempt": 1,
            "started_at": time.time(),
            "cache_hit": True,
            "cached_from": hit.node_run_id,
            "cached_at": hit.created_at,
            "content": content,
            "provider": hit.provider,
            "model": hit.model,
            "usage": {"input": 0, "output": 0},
            "duration_ms": 0.0,
        }
        return NodeResult.completed(contract.annotate(value), snapshot, [attempt])

    def entry(self, response: ChatResponse) -> CacheEntry | None:
        """What to remember of a valid fresh answer (None when another model than the key's served it)."""
        served = f"{response.provider}/{response.model}"
        if not self.identity.startswith(served):
            return None
        return CacheEntry(self.key, response.provider, response.model, stored_answer(response))


def _asked_fresh(node: LlmCallNode, state: RunState) -> bool:
    """A person reran this node explicitly: they want a new answer, not the one they saw (the
    nodes after it are not concerned; their requests change when its answer does)."""
    queued = state.fresh.get(node.id)
    return queued is not None and node.id in state.nodes and state.nodes[node.id].activation == queued
