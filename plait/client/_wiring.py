"""How a client opens its store and engines, and the provider an `llm` spec names: the wiring
the CLI uses, kept apart from the client's methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plait.llm.provider import Provider
    from plait.runs.engines import RunEngines
    from plait.store import Store


def open_engines(
    db: str | None, llm: str | Provider | None, config: str | None, cache: bool
) -> tuple[Store, RunEngines]:
    """The store (migrated, system graphs synced) and the engines, wired as the CLI wires them."""
    from plait.config import configured_servers
    from plait.engine.events import EventBus
    from plait.evolve.system import open_store
    from plait.runs.engines import RunEngines
    from plait.runs.model_choice import chosen
    from plait.runs.start import local_graphs

    if isinstance(llm, str) or llm is None:
        provider, selection = chosen(llm, config)
    else:
        provider, selection = llm, None
    servers = configured_servers(config)
    store = open_store(db)
    engines = RunEngines(store, provider, llm=selection, here="this client", events=EventBus(), cache=cache,
                         mcp_servers=servers, graphs=local_graphs(store))  # fmt: skip
    return store, engines


def provider_of(llm: str, config: str | None) -> Any:
    from plait.llm.select import provider_from_spec

    return provider_from_spec(llm, config)
