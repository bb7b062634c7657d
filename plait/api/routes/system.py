"""/api/health and /api/providers: is the server up, and where do its model calls go."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from plait import __version__
from plait.api.auth import caller
from plait.api.schemas import HealthOut, ProviderLoad, ProvidersOut
from plait.api.state import ServerState, get_state
from plait.llm.check import check_config, report_json
from plait.llm.pool import ProviderPool

router = APIRouter(tags=["system"])
State = Annotated[ServerState, Depends(get_state)]


@router.get("/health", response_model=HealthOut)
def health(state: State) -> HealthOut:
    """Up and answering (needs no token; says nothing about the data)."""
    return HealthOut(
        status="ok",
        version=__version__,
        database=state.store.display_url if not state.settings.auth_required else "(hidden)",
        auth_required=state.settings.auth_required,
        runs_executing=state.executor.active,
    )


@router.get("/providers", response_model=ProvidersOut, dependencies=[Depends(caller)])
def providers(state: State) -> ProvidersOut:
    """The provider in use and, with a plait.toml, its providers, models, roles and MCP servers
    as `plait config check --json` reports them (never a secret: key names, not values), and
    each provider's load now: calls in flight and queued, the current minute against rpm/tpm."""
    provider = state.provider
    report = report_json(check_config(state.config)) if state.config is not None else None
    rows = [ProviderLoad(**row) for row in provider.load()] if isinstance(provider, ProviderPool) else None
    return ProvidersOut(provider=provider.name if provider is not None else None, config=report, load=rows)
