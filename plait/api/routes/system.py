"""/api/health and /api/providers: is the server up, and where do its model calls go."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from plait import __version__
from plait.api.auth import caller
from plait.api.schemas import HealthOut, ProviderLoad, ProvidersOut, ResourcesOut, RoleOut
from plait.api.state import ServerState, get_state
from plait.config import DEFAULT_ROLE, resources_settings
from plait.engine.resources import probe
from plait.llm.check import check_config, report_json
from plait.llm.following import serving
from plait.llm.pool import ProviderPool
from plait.llm.provider import Provider

router = APIRouter(tags=["system"])
State = Annotated[ServerState, Depends(get_state)]


@router.get("/health", response_model=HealthOut)
async def health(state: State) -> HealthOut:
    """Up and answering (needs no token; says nothing about the data)."""
    # Async, on the event loop: it reads nothing but memory, and a sync route would wait for a
    # place on the thread pool behind every data request of a busy server (1-2 s with 200
    # clients) - a monitor would take a busy server for a dead one.
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
    provider = serving(state.provider)  # the pool of the settings in force
    config = state.settings_in_force.config() if state.settings_in_force is not None else None
    config = config if config is not None and config.source is not None else state.config
    report = report_json(check_config(config)) if config is not None else None
    rows = [ProviderLoad(**row) for row in provider.load()] if isinstance(provider, ProviderPool) else None
    name = provider.name if provider is not None else None
    return ProvidersOut(provider=name, roles=_roles(provider), config=report, load=rows)


@router.get("/resources", response_model=ResourcesOut, dependencies=[Depends(caller)])
def resources(state: State) -> ResourcesOut:
    """What resource-aware decisions see: CPU, memory, disk and the pool's free capacity now,
    the thresholds, and the newest decisions (runs queued, paused, degraded or rejected)."""
    gate = state.executor.engine.gate
    settings = gate.config if gate is not None else resources_settings()
    seen = gate.probe() if gate is not None else probe(".", state.provider)
    recent = [d.as_json() for d in state.store.decisions.recent(50)]
    return ResourcesOut(probe=seen.as_json(), thresholds=settings.model_dump(), decisions=recent)


def _roles(provider: Provider | None) -> list[RoleOut]:
    """A pool's roles of plait.toml; a single provider serves every role itself."""
    if provider is None:
        refusal = "no model is configured: start `plait serve` with --llm or a plait.toml"
        return [RoleOut(role=DEFAULT_ROLE, default=True, serves=None, refusal=refusal)]
    if not isinstance(provider, ProviderPool):
        return [RoleOut(role=DEFAULT_ROLE, default=True, serves=provider.name, refusal=None)]
    served = {r.role: r.resolves_to for r in check_config(provider.config).roles}
    names = sorted(provider.config.roles, key=lambda role: (role != DEFAULT_ROLE, role))
    return [
        RoleOut(role=role, default=role == DEFAULT_ROLE, serves=served.get(role), refusal=provider.refusal(role))
        for role in names
    ]
