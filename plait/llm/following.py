"""A provider that follows the settings: each new model call goes to the provider built from the
settings in force, and a call already running finishes on the one it started with.

A server or a worker whose settings change while it runs (plait/config/overlay.py) has one
`FollowingProvider` as its engine's provider. It asks its `SettingsSource` for the settings in
force (a revision and a snapshot of them, held in memory) and builds a provider from each new
revision with `build` (a `ProviderPool`, usually); before a call, at most every interval the
source decides, the source looks at the store's revision, off the event loop. A provider a new
revision replaced is closed once the calls it serves have ended.

Everything else the engine asks (`refusal`, `lacks`, `counter_for_role`, ...) is answered by the
provider of the settings in force, without I/O, as `Provider` requires.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, ProviderError

if TYPE_CHECKING:
    from plait.config import PlaitConfig
    from plait.llm.tokens import TokenCounter

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)
log = logging.getLogger("plait.llm")


class SettingsSource(Protocol[S_co]):
    """Where a `FollowingProvider` learns the settings in force."""

    def current(self) -> tuple[int, S_co]:
        """The revision in force and its settings, as last seen (in memory: no I/O)."""
        ...

    def due(self) -> bool:
        """Whether it is time to look at the store's revision again (no I/O)."""
        ...

    def check(self) -> None:
        """Look at the store's revision, and take up the settings of a new one (I/O: called
        off the event loop)."""
        ...


class FollowingProvider(Provider, Generic[S]):
    """The provider of the settings in force (see the module docstring)."""

    def __init__(self, source: SettingsSource[S], build: Callable[[S], Provider | None]) -> None:
        """`build`: the provider for a revision's settings (None: no provider can be made; a
        model call is then refused as without a provider)."""
        self._source = source
        self._build = build
        self._revision: int | None = None
        self._provider: Provider | None = None
        self._calls: dict[int, int] = {}
        """Calls in flight by the id of the provider serving them."""
        self._retired: list[Provider] = []
        """Providers a newer revision replaced, closed once their last call ended."""

    @property
    def name(self) -> str:  # type: ignore[override]
        provider = self.serving
        return provider.name if provider is not None else "none"

    @property
    def revision(self) -> int | None:
        """The revision whose provider serves new calls (None: none built yet)."""
        return self._revision

    @property
    def serving(self) -> Provider | None:
        """The provider new calls go to now, built from the settings in force."""
        revision, settings = self._source.current()
        if revision != self._revision:
            old, self._provider = self._provider, self._build(settings)
            self._revision = revision
            if old is not None:
                self._retired.append(old)
        return self._provider

    @property
    def config(self) -> PlaitConfig | None:
        """The configuration of the pool serving new calls (None: it is not a pool)."""
        found = getattr(self.serving, "config", None)
        return found if found is not None and hasattr(found, "roles") else None

    def load(self) -> list[dict[str, Any]]:
        """The serving pool's load (`ProviderPool.load`); empty when it is not a pool."""
        load = getattr(self.serving, "load", None)
        return list(load()) if callable(load) else []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self._source.due():
            await asyncio.to_thread(self._source.check)
        provider = self.serving
        if provider is None:
            from plait.llm.select import NO_PROVIDER_HINT

            raise ProviderError(f"no provider is configured: {NO_PROVIDER_HINT}", kind="config", retryable=False)
        key = id(provider)
        self._calls[key] = self._calls.get(key, 0) + 1
        try:
            return await provider.complete(request)
        finally:
            self._calls[key] -= 1
            if not self._calls[key]:
                del self._calls[key]
            await self._close_idle()

    async def _close_idle(self) -> None:
        """Close the replaced providers no call uses any more."""
        idle = [p for p in self._retired if id(p) not in self._calls]
        self._retired = [p for p in self._retired if id(p) in self._calls]
        for provider in idle:
            try:
                await provider.aclose()
            except Exception:  # a provider that fails to close must not fail the call that ended
                log.exception("closing the provider of earlier settings failed")

    async def aclose(self) -> None:
        providers = [*self._retired, *([self._provider] if self._provider is not None else [])]
        self._retired, self._provider, self._revision = [], None, None
        for provider in providers:
            await provider.aclose()

    def refusal(self, role: str) -> str | None:
        provider = self.serving
        if provider is None:
            from plait.llm.select import NO_PROVIDER_HINT

            return f"it calls a model but no provider is configured: {NO_PROVIDER_HINT}"
        return provider.refusal(role)

    def lacks(self, role: str, needs: frozenset[str]) -> str | None:
        provider = self.serving
        return provider.lacks(role, needs) if provider is not None else None

    def counter_for_role(self, role: str, model: str | None = None) -> TokenCounter:
        provider = self.serving
        return provider.counter_for_role(role, model) if provider is not None else super().counter_for_role(role)

    def estimate_cost(self, request: ChatRequest) -> float:
        provider = self.serving
        return provider.estimate_cost(request) if provider is not None else 0.0

    def cache_identity(self, request: ChatRequest) -> str | None:
        provider = self.serving
        return provider.cache_identity(request) if provider is not None else None

    async def count_tokens(self, messages: list[dict[str, Any]]) -> int | None:
        provider = self.serving
        return await provider.count_tokens(messages) if provider is not None else None


def serving(provider: Provider | None) -> Provider | None:
    """The provider that answers now: a following provider's current one, else `provider`."""
    return provider.serving if isinstance(provider, FollowingProvider) else provider
