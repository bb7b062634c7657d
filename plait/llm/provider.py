"""The interface between the engine and a model provider.

Every provider (the embedded model, the scripted one, an OpenAI-compatible endpoint, the pool
that routes roles to those) subclasses `Provider`. Only `complete` must be written; every other
method has a default that suits a provider without that knowledge, so a provider overrides only
what it really knows.

- `name`: a short label for the provider (shown by `GET /providers`); not the "provider/model" an
  answer records, which comes with each `ChatResponse`.
- `complete(request)`: answer one chat request, or raise `ProviderError` (its `retryable` says
  whether trying again may help). The engine may call it concurrently from many nodes of many
  runs, and may cancel a call (a node's timeout, a run stopped); a provider limits its own
  concurrency where it must.
- `aclose()`: free what the provider holds (clients, a loaded model). Called once, by whoever
  owns the provider (an engine's `aclose`, a command's clean-up, the pool for the providers it
  built) when it is done with it; the engine calls nothing on a provider after it. Default:
  nothing to free.
- `refusal(role)`: why no request for `role` can be served here, or None. Asked before a run
  starts and by dry runs, so a run fails at once rather than at its first model call. Default:
  None (every role is served).
- `lacks(role, needs)`: why the model serving `role` cannot do what a node needs (`needs`:
  capabilities such as "tools", "mcp"), or None. Asked before a run starts. Default: None.
- `counter_for_role(role, model)`: the token counter of the model a request for `role` (or the
  named `model`) would go to first; prompt budgets and limits count with it. Default: the
  ~4-characters-per-token estimate.
- `estimate_cost(request)`: what `request` would cost in USD before it is sent (checked against
  a run's `max_cost_usd`). Default: 0.0 (no prices known).
- `cache_identity(request)`: "provider/model" that would answer `request`, the response cache's
  key; None keeps the provider's answers out of the cache. Default: None (not cached).
- `count_tokens(messages)`: the prompt's tokens as the model itself counts them (its chat
  template included), for dry runs. Default: None, and the caller counts the messages with
  `counter_for_role`.

The engine calls these on one event loop; the synchronous ones must return quickly (no I/O).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from plait.llm.types import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from plait.llm.tokens import TokenCounter


class Provider(ABC):
    """A model provider as the engine calls it (see the module docstring)."""

    name: str

    @abstractmethod
    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one chat request, or raise ProviderError."""

    async def aclose(self) -> None:
        """Free what the provider holds; called once, at the end. Nothing to free by default."""
        return None

    def refusal(self, role: str) -> str | None:
        """Why no request for `role` can be served here, or None (the default: every role is)."""
        return None

    def lacks(self, role: str, needs: frozenset[str]) -> str | None:
        """Why the model serving `role` lacks a capability in `needs`, or None (the default)."""
        return None

    def counter_for_role(self, role: str, model: str | None = None) -> TokenCounter:
        """The token counter of the model serving `role` (or `model`); the estimate by default."""
        from plait.llm.tokens import ESTIMATE  # token counting loads only where a prompt is counted

        return ESTIMATE

    def estimate_cost(self, request: ChatRequest) -> float:
        """The request's cost in USD before it is sent; 0.0 (no prices) by default."""
        return 0.0

    def cache_identity(self, request: ChatRequest) -> str | None:
        """ "provider/model" that would answer `request` (the cache key), or None: not cached (the default)."""
        return None

    async def count_tokens(self, messages: list[dict[str, Any]]) -> int | None:
        """The prompt's tokens as the model counts them, or None (the default): count with
        `counter_for_role` instead."""
        return None
