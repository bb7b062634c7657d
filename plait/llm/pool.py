"""The provider pool: roles to providers from `plait.toml`, per-provider limits,
retries with backoff, failover, and every decision recorded on the node's attempt.

A request for a role goes to the first of the role's targets with capacity right now (skipping
providers that cannot be used here; `plait config check` says why), or, when all are full,
queues at the first. At a target it waits for capacity: a slot under the provider's
`max_concurrency`, and room in its `rpm` / `tpm` minute (the prompt's tokens are counted before
sending by the target model's tokenizer, `plait.llm.tokens`, then taken from the answer). An
error that trying again may fix (429, 5xx, a timeout, a refused connection) is retried on the
same target `retries` times with exponential backoff and jitter (a longer `Retry-After` from the
server wins), then the request fails over to the next target; any other error fails the attempt
at once. Limits hold per process, and across every process of a deployment when `[workers]`
names a Redis broker (`shared_limits.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from plait.config import DEFAULT_ROLE, PlaitConfig, ProviderConfig
from plait.llm.check import check_config
from plait.llm.provider import Provider
from plait.llm.shared_limits import SharedLimits
from plait.llm.slots import CRITICAL, PrioritySlots, hand_over
from plait.llm.tokens import ESTIMATE, TokenCounter, count_messages, counter_for
from plait.llm.types import ChatRequest, ChatResponse, ProviderError
from plait.redact import register

MAX_BACKOFF_S = 30.0
DEFAULT_ANSWER_TOKENS = 256
"""Answer allowance assumed for a request without max_tokens (limits and cost estimates)."""
WINDOW_S = 60.0


@dataclass
class _Lane:
    """One provider's capacity in this process."""

    slots: PrioritySlots
    sent: deque[float] = field(default_factory=deque)
    tokens: deque[tuple[float, int]] = field(default_factory=deque)


class ProviderPool(Provider):
    """The provider that routes each request, by its role, to the providers of `plait.toml`.

    What a caller can rely on:
    - What can be used here is checked once, when the pool is built (`check_config`):
      `refusal`, `lacks` and `complete` agree on it for the pool's lifetime.
    - `complete` tries the role's targets in order, a target with capacity now going first. It
      holds each provider to its `max_concurrency`, `rpm` and `tpm` within this process (and
      across processes with `shared` limits), retries a retryable error on the same target with backoff, then fails
      over to the next target, and after the last tries `[pool] degrade_to` if that is set.
    - The answer names the target that served it (provider id and model as in `plait.toml`)
      and its cost, and its `decisions` record every step (queued, sent, retry, failover...).
      A `ProviderError` it raises carries the same decisions: at once for an error that trying
      again cannot fix (kind `config` when no target can serve the role), else once every
      target has failed.
    - Providers are built on first use; `aclose` closes them.
    Concurrent calls are safe on one event loop; the pool is not thread-safe.
    """

    name = "pool"

    def __init__(
        self,
        config: PlaitConfig,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        shared: SharedLimits | None = None,
    ):
        """`shared`: hold the providers' limits across processes too (a Redis of the deployment)."""
        self.config = config
        self.shared = shared
        self._report = check_config(config)
        """What can be used here, checked once: `complete` and `refusal` agree on it."""
        self._usable = {s.provider.id for s in self._report.providers if s.usable}
        self._providers: dict[str, Provider] = {}
        self._lanes: dict[str, _Lane] = {}
        self._counters: dict[tuple[str, str], TokenCounter] = {}
        self._targets: dict[str, list[tuple[ProviderConfig, str]]] = {}
        self._sleep = sleep
        self._clock = clock

    def load(self) -> list[dict[str, Any]]:
        """Each configured provider's state in this process now: usable, calls in flight and
        queued for a slot, requests and tokens in the current minute against its limits."""
        now = self._clock()
        rows: list[dict[str, Any]] = []
        for config in self.config.providers:
            lane = self._lanes.get(config.id)
            recent = [t for t in lane.sent if t > now - WINDOW_S] if lane is not None else []
            tokens = sum(n for t, n in lane.tokens if t > now - WINDOW_S) if lane is not None else 0
            rows.append(
                {
                    "id": config.id,
                    "usable": config.id in self._usable,
                    "in_flight": lane.slots.in_use if lane is not None else 0,
                    "queued": lane.slots.waiting if lane is not None else 0,
                    "max_concurrency": config.max_concurrency,
                    "requests_last_minute": len(recent),
                    "rpm": config.rpm,
                    "tokens_last_minute": tokens,
                    "tpm": config.tpm,
                }
            )
        return rows

    def refusal(self, role: str) -> str | None:
        """Why no request for `role` can be served here (checked before a run starts), or None."""
        where = self.config.source or "the built-in configuration"
        if role not in self.config.roles:
            known = ", ".join(sorted(self.config.roles)) or "none"
            return f"the role '{role}' is not configured in {where} (roles: {known}); add it under [roles]"
        report = next(r for r in self._report.roles if r.role == role)
        if report.resolves_to is None:
            reasons = "; ".join(f"{target}: {', '.join(why)}" for target, why in report.targets)
            return f"no provider here can serve the role '{role}' ({reasons}); `plait config check` shows the setup"
        return None

    def lacks(self, role: str, needs: frozenset[str]) -> str | None:
        """Why the model a `role` request goes to first cannot do what a node needs (`tools`,
        `mcp`), or None."""
        first = self._first_usable(role, None)
        if first is None or not needs:
            return None
        provider, model_name = first
        if provider.kind == "scripted":
            return None  # scripted answers can be tool calls
        model = provider.model(model_name)
        have = {str(c) for c in model.capabilities} if model is not None else set()
        missing = sorted(needs - have)
        if not missing:
            return None
        return (
            f"the model {provider.id}/{model_name} serving the role '{role}' lacks the capability "
            f"{', '.join(missing)}; switch the node's model_role to a model that has it, or add it to the "
            f"model's capabilities in {self.config.source or 'plait.toml'} if it really supports it"
        )

    def cache_identity(self, request: ChatRequest) -> str | None:
        """ "provider/model" of the role's first usable target (None for a scripted one: never cached)."""
        first = self._first_usable(request.model_role, request.model)
        if first is None or first[0].kind == "scripted":
            return None
        return f"{first[0].id}/{first[1]}"

    def estimate_cost(self, request: ChatRequest) -> float:
        """What the request would cost on its role's first usable target, from the prompt's tokens
        (that model's tokenizer) and the answer's allowance (checked against a run's
        `max_cost_usd` before it is sent)."""
        first = self._first_usable(request.model_role, request.model)
        priced = first[0].model(first[1]) if first is not None else None
        if first is None or priced is None or not (priced.price_in or priced.price_out):
            return 0.0
        prompt = count_messages(self._counter(*first), request.messages)
        return priced.cost_usd(prompt, request.max_tokens or DEFAULT_ANSWER_TOKENS)

    def counter_for_role(self, role: str, model: str | None = None) -> TokenCounter:
        """The token counter of the model a request for `role` would try first (budgets count
        with it), the estimate when no target is usable."""
        first = self._first_usable(role, model)
        return self._counter(*first) if first is not None else ESTIMATE

    def _counter(self, provider: ProviderConfig, model: str) -> TokenCounter:
        key = (provider.id, model)
        if key not in self._counters:
            self._counters[key] = counter_for(provider, model)
        return self._counters[key]

    def _usable_targets(self, role: str) -> list[tuple[ProviderConfig, str]]:
        """The (provider, model) pairs serving `role` here, in failover order (the config and
        what is usable are fixed for the pool's lifetime, so this is worked out once per role)."""
        targets = self._targets.get(role)
        if targets is None:
            targets = self._targets[role] = [(p, m) for p, m in self.config.targets(role) if p.id in self._usable]
        return targets

    def _named(self, model: str | None) -> tuple[ProviderConfig, str] | None:
        """A node's model override written `PROVIDER/MODEL` with a configured provider's id: that
        provider alone, asked for that model. Any other name (`gpt-4o`, `meta-llama/x` where no
        provider is called `meta-llama`) is a model name for the role's own providers."""
        provider_id, slash, name = (model or "").partition("/")
        provider = self.config.provider(provider_id) if slash and name else None
        if provider is None:
            return None
        if provider.id not in self._usable:
            raise ProviderError(
                f"the node asks for {model}, but provider '{provider.id}' cannot be used here: "
                + "; ".join(next(s.problems for s in self._report.providers if s.provider.id == provider.id)),
                kind="config",
                retryable=False,
            )
        return provider, name

    def _first_usable(self, role: str | None, model: str | None) -> tuple[ProviderConfig, str] | None:
        """The (provider, model) a request for `role` would try first, capacity aside."""
        named = self._named(model)
        if named is not None:
            return named
        targets = self._usable_targets(role or DEFAULT_ROLE)
        if not targets:
            return None
        provider, listed = targets[0]
        return provider, model or listed

    async def complete(self, request: ChatRequest) -> ChatResponse:
        role = request.model_role or DEFAULT_ROLE
        targets = self._usable_targets(role)
        if not targets:
            reason = self.refusal(role) or f"no provider for the role '{role}'"
            raise ProviderError(reason, kind="config", retryable=False)
        named = self._named(request.model)
        if named is not None:  # sent to the provider it names, never to the role's others
            targets, request = [named], replace(request, model=named[1])
        decisions: list[dict[str, Any]] = []
        if request.degraded:
            degraded = self._degrade_target([])
            if degraded is not None:
                decisions.append({"event": "degraded", "to": f"{degraded[0].id}/{degraded[1]}", "reason": "resources"})
                targets = [degraded]
        estimate = _estimate_tokens(request, self._counter(targets[0][0], request.model or targets[0][1]))
        targets = self._by_capacity(targets, request.priority, estimate, decisions)
        last: ProviderError | None = None
        for index, (provider, model) in enumerate(targets):
            if index:
                decisions.append({"event": "failover", "to": f"{provider.id}/{model}", "error": str(last)})
            may_skip = index < len(targets) - 1  # a critical request fails over rather than queue
            try:
                response = await self._on_target(
                    provider, request.model or model, request, estimate, decisions, may_skip
                )
            except ProviderError as exc:
                exc.decisions = decisions
                if not exc.retryable:
                    raise
                last = exc
                continue
            return response
        assert last is not None
        degraded = self._degrade_target(targets)
        if degraded is not None:
            provider, model = degraded
            decisions.append({"event": "degraded", "to": f"{provider.id}/{model}", "error": str(last)})
            try:
                response = await self._on_target(provider, model, request, estimate, decisions)
            except ProviderError as exc:
                exc.decisions = decisions
                raise
            return response
        raise ProviderError(
            f"every provider for the role '{role}' failed; the last: {last}",
            kind=last.kind,
            decisions=decisions,
        )

    def _by_capacity(
        self,
        targets: list[tuple[ProviderConfig, str]],
        priority: int,
        estimate: int,
        decisions: list[dict[str, Any]],
    ) -> list[tuple[ProviderConfig, str]]:
        """The first target with capacity right now (a free slot, room in its minute) goes first;
        the ones passed over stay next in line. When all are full, the order stays: the request
        queues at the first."""
        for index, (provider, _) in enumerate(targets):
            lane = self._lane(provider)
            if lane.slots.has_room(priority) and self._window_wait(provider, lane, estimate)[0] <= 0:
                for skipped, skipped_model in targets[:index]:
                    decisions.append({"event": "busy", "target": f"{skipped.id}/{skipped_model}"})
                return [targets[index], *targets[:index], *targets[index + 1 :]]
        return targets

    def _degrade_target(self, tried: list[tuple[ProviderConfig, str]]) -> tuple[ProviderConfig, str] | None:
        """`[pool] degrade_to`, when it is usable here and was not one of the targets just tried."""
        target = self.config.pool.degrade_to
        if target is None:
            return None
        provider_id, _, model = target.partition("/")
        provider = self.config.provider(provider_id)
        if provider is None or provider.id not in self._usable or (provider.id, model) in {(p.id, m) for p, m in tried}:
            return None
        return provider, model

    async def aclose(self) -> None:
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()
        if self.shared is not None:
            await self.shared.aclose()

    # -- one target ------------------------------------------------------------------------------------------

    async def _on_target(
        self,
        config: ProviderConfig,
        model: str,
        request: ChatRequest,
        estimate: int,
        decisions: list[dict[str, Any]],
        may_skip: bool = False,
    ) -> ChatResponse:
        """`estimate`: the request's tokens (prompt and answer allowance) for the tpm minute."""
        target = f"{config.id}/{model}"
        lane = self._lane(config)
        for attempt in range(config.retries + 1):
            await self._wait_for_capacity(config, lane, estimate, target, decisions)
            if may_skip and request.priority >= CRITICAL and not lane.slots.try_acquire(request.priority):
                decisions.append({"event": "busy", "target": target})
                raise ProviderError(f"{target} has no free slot for a critical request", kind="busy")
            waited = None
            if not (may_skip and request.priority >= CRITICAL) and not lane.slots.try_acquire(request.priority):
                started = self._clock()  # queued only when no slot was free: never for a host that was slow
                await lane.slots.acquire(request.priority)
                waited = self._clock() - started
            try:
                if waited is not None:
                    decisions.append({"event": "queued", "target": target, "reason": "max_concurrency",
                                      "wait_s": round(waited, 3)})  # fmt: skip
                lane.sent.append(self._clock())
                lane.tokens.append((self._clock(), estimate))
                decisions.append({"event": "sent", "target": target})
                try:
                    async with self._shared(config, estimate, target, decisions):
                        response = await self._provider(config).complete(
                            request if request.model == model else replace(request, model=model)
                        )
                finally:
                    lane.slots.release()
                await hand_over()
            except ProviderError as exc:
                decisions.extend(exc.decisions)  # what the provider itself did (e.g. a weaker json_mode)
                if not exc.retryable or attempt == config.retries:
                    raise
                delay = self._backoff(config, attempt, exc.retry_after)
                decisions.append({"event": "retry", "target": target, "error": str(exc), "wait_s": round(delay, 3)})
                await self._sleep(delay)
                continue
            lane.tokens.append((self._clock(), response.usage.input_tokens + response.usage.output_tokens - estimate))
            return self._priced(config, model, response, decisions)
        raise AssertionError("unreachable: the last attempt returns or raises")

    @contextlib.asynccontextmanager
    async def _shared(
        self, config: ProviderConfig, estimate: int, target: str, decisions: list[dict[str, Any]]
    ) -> AsyncIterator[None]:
        """The deployment-wide minute and slot of `config`, when limits are shared."""
        if self.shared is None:
            yield
            return
        waited = await self.shared.window_wait(config.id, config.rpm, config.tpm, estimate)
        if waited > 0.001:
            decisions.append(
                {"event": "queued", "target": target, "reason": "shared rpm/tpm", "wait_s": round(waited, 3)}
            )
        async with self.shared.slot(config.id, config.max_concurrency) as slot_wait:
            if slot_wait > 0.001:
                decisions.append({"event": "queued", "target": target, "reason": "shared max_concurrency",
                                  "wait_s": round(slot_wait, 3)})  # fmt: skip
            yield

    async def _wait_for_capacity(
        self, config: ProviderConfig, lane: _Lane, estimate: int, target: str, decisions: list[dict[str, Any]]
    ) -> None:
        """Hold the request until the provider's requests-per-minute and tokens-per-minute allow it."""
        while True:
            wait, reason = self._window_wait(config, lane, estimate)
            if wait <= 0:
                return
            decisions.append({"event": "queued", "target": target, "reason": reason, "wait_s": round(wait, 3)})
            await self._sleep(wait)

    def _window_wait(self, config: ProviderConfig, lane: _Lane, estimate: int) -> tuple[float, str]:
        """How long the rpm / tpm minute makes a request wait now (0: it may go), and which limit."""
        now = self._clock()
        while lane.sent and lane.sent[0] <= now - WINDOW_S:
            lane.sent.popleft()
        while lane.tokens and lane.tokens[0][0] <= now - WINDOW_S:
            lane.tokens.popleft()
        if config.rpm is not None and len(lane.sent) >= config.rpm:
            return lane.sent[0] + WINDOW_S - now, "rpm"
        if config.tpm is not None and lane.tokens and sum(t for _, t in lane.tokens) + estimate > config.tpm:
            return lane.tokens[0][0] + WINDOW_S - now, "tpm"
        return 0.0, ""

    def _backoff(self, config: ProviderConfig, attempt: int, retry_after: float | None) -> float:
        delay: float = min(MAX_BACKOFF_S, config.backoff_s * 2.0**attempt)
        delay *= random.uniform(0.5, 1.0)  # jitter: many requests failing together do not retry together
        return max(delay, retry_after or 0.0)

    def _priced(
        self, config: ProviderConfig, model: str, response: ChatResponse, decisions: list[dict[str, Any]]
    ) -> ChatResponse:
        """Recorded as configured ("provider/model" of plait.toml) and priced from that model."""
        priced = config.model(model)
        cost = response.cost_usd
        if cost == 0 and priced is not None:
            cost = priced.cost_usd(response.usage.input_tokens, response.usage.output_tokens)
        decisions.extend(response.decisions)  # what the provider itself did (e.g. a weaker json_mode)
        return replace(response, provider=config.id, model=model, cost_usd=cost, decisions=decisions)

    def _lane(self, config: ProviderConfig) -> _Lane:
        if config.id not in self._lanes:
            self._lanes[config.id] = _Lane(PrioritySlots(config.max_concurrency, config.reserve_share))
        return self._lanes[config.id]

    def _provider(self, config: ProviderConfig) -> Provider:
        if config.id not in self._providers:
            self._providers[config.id] = self._build(config)
        return self._providers[config.id]

    def _build(self, config: ProviderConfig) -> Provider:
        if config.kind == "openai":
            from plait.llm.openai_compat import OpenAIProvider

            key = os.environ.get(config.api_key_env) if config.api_key_env else None
            register(key)  # a config built in code, not loaded from plait.toml, is redacted too
            return OpenAIProvider(config, key)
        if config.kind == "local":
            from plait.llm.local import LocalProvider

            if config.file is None:
                return LocalProvider()
            folder = Path(self.config.source).parent if self.config.source else Path()
            return LocalProvider(model_file=str(folder / Path(config.file).expanduser()))
        from plait.llm.scripted import ScriptedProvider

        base = Path(self.config.source).parent if self.config.source else Path()
        return ScriptedProvider.from_file(base / (config.file or ""))


def _estimate_tokens(request: ChatRequest, counter: TokenCounter) -> int:
    """Before the call (for the tpm minute): the prompt's tokens plus the answer's allowance."""
    answer = request.max_tokens if request.max_tokens is not None else DEFAULT_ANSWER_TOKENS
    return count_messages(counter, request.messages) + answer


def roles_of(provider: Provider | None) -> dict[str, tuple[str, ...]]:
    """The roles a provider routes (a pool's plait.toml roles, as the settings in force change
    them; none for a single provider)."""
    from plait.llm.following import serving

    provider = serving(provider)
    return dict(provider.config.roles) if isinstance(provider, ProviderPool) else {}
