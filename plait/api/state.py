"""What every route needs, set up once by the app's lifespan (`app.state.plait`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from fastapi import Request

from plait.api.chat import ChatHub
from plait.api.events import EventLog
from plait.api.executor import RunExecutor
from plait.api.route_reader import ApiRouteReader
from plait.api.script_slots import ScriptSlots
from plait.api.settings import ServerSettings
from plait.config import PlaitConfig
from plait.llm.provider import Provider
from plait.runs.settings_in_force import SettingsInForce
from plait.store import Store


@dataclass
class ServerState:
    """The one store, provider, executor and event log of a running server. Every route of one
    app gets the same instance, for the app's whole lifetime."""

    settings: ServerSettings
    store: Store
    provider: Provider | None
    config: PlaitConfig | None
    """The plait.toml in use (None: there is none)."""
    executor: RunExecutor
    events: EventLog
    script_slots: ScriptSlots = field(default_factory=ScriptSlots)
    """How many prompt-script previews and generations run at once (`plait.api.script_slots`)."""
    routes: ApiRouteReader | None = None
    """Prompt scripts' `readRoute`: this app's own allowed GET routes, in-process."""
    chat: ChatHub | None = None
    """The chat: its turns in flight and its listeners (`plait.api.chat`)."""
    settings_in_force: SettingsInForce | None = None
    """The settings this server's runs follow (None: `--llm` chose one model, which settings do
    not change)."""


def server_state(request: Request) -> ServerState:
    """The state of the app serving `request`."""
    return cast(ServerState, request.app.state.plait)


async def get_state(request: Request) -> ServerState:
    """The dependency routes take (`Depends(get_state)`). Async on purpose: FastAPI runs a sync
    dependency on its thread pool, and one more thread hop per request costs more than the
    lookup itself (under load, where 40 threads share one GIL, a hop can wait milliseconds)."""
    return server_state(request)
