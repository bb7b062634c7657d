"""Roles to providers, from `plait.toml`: a request goes to the first target of its role that can
be used here, and fails over to the next on an error that trying elsewhere may fix (429, 5xx,
timeouts, connection errors). The full provider pool (limits, backoff, priorities, recorded
decisions) builds on this.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from plait.llm.check import check_config
from plait.llm.config import DEFAULT_ROLE, PlaitConfig, ProviderConfig
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, ProviderError


class RoleRouter:
    name = "config"

    def __init__(self, config: PlaitConfig):
        self.config = config
        self._usable = {s.provider.id for s in check_config(config).providers if s.usable}
        self._providers: dict[str, Provider] = {}

    def refusal(self, role: str) -> str | None:
        """Why no request for `role` can be served here (checked before a run starts), or None."""
        where = self.config.source or "the built-in configuration"
        if role not in self.config.roles:
            known = ", ".join(sorted(self.config.roles)) or "none"
            return f"the role '{role}' is not configured in {where} (roles: {known}); add it under [roles]"
        report = {r.role: r for r in check_config(self.config).roles}[role]
        if report.resolves_to is None:
            reasons = "; ".join(f"{target}: {', '.join(why)}" for target, why in report.targets)
            return f"no provider here can serve the role '{role}' ({reasons}); `plait config check` shows the setup"
        return None

    async def complete(self, request: ChatRequest) -> ChatResponse:
        role = request.model_role or DEFAULT_ROLE
        targets = [(p, m) for p, m in self.config.targets(role) if p.id in self._usable]
        if not targets:
            reason = self.refusal(role) or f"no provider for the role '{role}'"
            raise ProviderError(reason, kind="config", retryable=False)
        failures: list[str] = []
        for provider, model in targets:
            try:
                response = await self._provider(provider).complete(replace(request, model=request.model or model))
            except ProviderError as exc:
                if not exc.retryable:
                    raise
                failures.append(str(exc))
                continue
            # Recorded as configured ("provider/model" of plait.toml) and priced from that model.
            served = request.model or model
            priced = provider.model(served)
            cost = response.cost_usd
            if cost == 0 and priced is not None:
                cost = priced.cost_usd(response.usage.input_tokens, response.usage.output_tokens)
            return replace(response, provider=provider.id, model=served, cost_usd=cost)
        raise ProviderError(f"every provider for the role '{role}' failed: " + "; ".join(failures), kind="failover")

    async def aclose(self) -> None:
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()

    def _provider(self, config: ProviderConfig) -> Provider:
        if config.id not in self._providers:
            self._providers[config.id] = self._build(config)
        return self._providers[config.id]

    def _build(self, config: ProviderConfig) -> Provider:
        if config.kind == "openai":
            from plait.llm.openai_compat import OpenAIProvider

            return OpenAIProvider(config, os.environ.get(config.api_key_env) if config.api_key_env else None)
        if config.kind == "local":
            from plait.llm.local import LocalProvider

            return LocalProvider()
        from plait.llm.scripted import ScriptedProvider

        base = Path(self.config.source).parent if self.config.source else Path()
        return ScriptedProvider.from_file(base / (config.file or ""))
