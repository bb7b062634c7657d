"""`create_app(settings)`: the FastAPI application `plait serve` runs.

The app owns one store and one `RunExecutor` (one engine) for its lifetime: runs started over
HTTP execute as background tasks in this process. At start-up it continues the runs a
stopped or crashed server left unfinished; at shutdown it stops the runs it is executing,
which leaves them resumable (the next start, or `plait resume`, continues them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi_offline import FastAPIOffline

from plait import __version__
from plait.api import errors
from plait.api.auth import caller
from plait.api.browser import BrowserGuard, BrowserPolicy
from plait.api.chat import ChatHub
from plait.api.evaluation_tasks import stop_evaluations
from plait.api.events import EventLog
from plait.api.executor import RunExecutor
from plait.api.handoff import HandOff
from plait.api.limits import BodyLimit
from plait.api.openapi import ERROR_RESPONSES, describe
from plait.api.route_reader import ApiRouteReader
from plait.api.routes import (
    chat,
    corrections,
    drafts,
    evaluation_runs,
    evaluations,
    events,
    graphs,
    inspection,
    knowledge,
    memory,
    runs,
    schedules,
    seed,
    skills,
    system,
    templates,
)
from plait.api.routes import settings as settings_routes
from plait.api.settings import ServerSettings
from plait.api.state import ServerState
from plait.config import PlaitConfig, WorkersConfig, config_path, load_config
from plait.engine.events import EventBus
from plait.errors import PlaitError, Refusal
from plait.llm.provider import Provider
from plait.llm.select import provider_from_spec
from plait.runs.model_choice import describe as describe_llm
from plait.runs.schedules import Scheduler
from plait.runs.settings_in_force import SettingsInForce, following_provider
from plait.sandbox.shared import close_shared_sandbox
from plait.store import Store
from plait.web import mount as mount_workbench
from plait.worker.app import queued

log = logging.getLogger("plait.api")

DOCS_ASSETS = "/docs/assets"
"""Where the files of the /docs page (Swagger UI's script, style sheet, icon) are served."""


class ServerConfigError(PlaitError):
    """The server cannot start as configured; the message says how to fix it."""

    kind = Refusal.INVALID
    code = "server_config_invalid"


def create_app(settings: ServerSettings | None = None, *, store: Store | None = None) -> FastAPI:
    """The application. Opens the store (unless given one: then the caller closes it) and the
    provider now, so that a bad database, config or auth set-up fails before serving."""
    settings = settings or ServerSettings()
    from plait.evolve.system import open_store, sync_system_graphs, sync_system_templates

    own_store = store is None
    if store is None:
        store = open_store(settings.db)
    else:
        sync_system_graphs(store)
        sync_system_templates(store)
    try:
        if settings.auth_required and store.tokens.count() == 0:
            why = "it listens beyond loopback" if not settings.require_auth else "--require-auth is set"
            raise ServerConfigError(
                f"this server asks every client for a token ({why}), but {store.display_url} has none: "
                "create one with `plait token create --name NAME`"
            )
        # without --llm, the runs here follow the settings: plait.toml with the store's changes over it
        in_force = SettingsInForce(store, settings.config) if settings.llm is None else None
        provider = (
            following_provider(in_force) if in_force is not None else provider_from_spec(settings.llm, settings.config)
        )
        config = load_config(settings.config) if config_path(settings.config) is not None else None
    except BaseException:
        if own_store:
            store.close()
        raise
    app = FastAPIOffline(  # /docs with Swagger UI's own files, served from here: no CDN, works offline
        docs_url="/docs",
        redoc_url=None,  # ReDoc's bundle still loads its logo from a CDN; Swagger UI is the one UI
        static_url=DOCS_ASSETS,
        title="Plait",
        version=__version__,
        description="Prompt graphs with typed edge contracts, recorded runs and human corrections.",
        lifespan=_lifespan(settings, store, provider, config, own_store, in_force),
        responses=ERROR_RESPONSES,
    )
    errors.install(app, hidden=_database_texts(store))
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["*"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        )
    app.add_middleware(BrowserGuard, policy=BrowserPolicy.of(settings))  # added last: it runs first
    protected = [Depends(caller)]
    app.include_router(system.router, prefix="/api")
    for module in (
        inspection,
        graphs,
        drafts,
        runs,
        corrections,
        events,
        templates,
        schedules,
        chat,
        knowledge,
        memory,
        evaluations,
        evaluation_runs,
        skills,
        settings_routes,
    ):
        app.include_router(module.router, prefix="/api", dependencies=protected)
    app.include_router(seed.router, dependencies=protected)  # the original API's routes, at their exact paths
    mount_workbench(app)  # `/` and `/assets`: the page only calls the routes above, with the caller's token
    describe(app, auth=settings.auth_required)
    return app


def _handoff(settings: ServerSettings, store: Store, config: PlaitConfig | None, events: EventLog) -> HandOff | None:
    """The hand-off to workers when a broker is named (`--queue`, `[workers] broker`), else None."""
    workers = config.workers if config is not None else WorkersConfig()
    chosen = queued(workers, settings.queue, db=settings.db, llm=settings.llm, config=settings.config)
    return HandOff(store, chosen, events, asyncio.get_running_loop()) if chosen is not None else None


def _database_texts(store: Store) -> tuple[str, ...]:
    """How the database's location could appear in an error (its URL, redacted or not, and a
    SQLite file's path): an HTTP client is never told where the data lives."""
    texts = [store.url, store.display_url]
    if store.url.startswith("sqlite") and ":///" in store.url:
        texts.append(store.url.split(":///", 1)[1].split("?", 1)[0])
    return tuple(sorted({t for t in texts if t}, key=len, reverse=True))


def _lifespan(
    settings: ServerSettings,
    store: Store,
    provider: Provider | None,
    config: PlaitConfig | None,
    own_store: bool,
    in_force: SettingsInForce | None,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        unfollow = in_force.follow() if in_force is not None else None  # the tables of plait.config follow too
        bus = EventBus()
        events = EventLog(bus)
        routes = ApiRouteReader(app)
        routes.bind(asyncio.get_running_loop())
        executor = RunExecutor(
            store,
            provider,
            bus=bus,
            events=events,
            mcp_servers=config.mcp_servers if config is not None else (),
            cache=settings.cache,
            llm=describe_llm(settings.llm, settings.config),  # stored on its runs: they go on with this model
            routes=routes,
            settings=in_force,
        )
        hub = ChatHub(store, executor, events)
        app.state.plait = ServerState(
            settings, store, provider, config, executor, events, routes=routes, chat=hub, settings_in_force=in_force
        )
        background: list[asyncio.Task[None]] = []
        handoff = _handoff(settings, store, config, events)
        executor.handoff = handoff
        try:
            if settings.resume_on_start and handoff is None:  # with workers, their reapers do it
                await executor.recover()
                background.append(asyncio.create_task(executor.wake_due(), name="plait-wake-due"))
            if settings.schedules:
                announce = "schedule" if handoff is not None else None  # the firing's run, with its message
                scheduler = Scheduler(store, lambda run_id: executor.launch(run_id, fresh=True), announce=announce)
                background.append(asyncio.create_task(scheduler.loop(), name="plait-schedules"))
            yield
        finally:
            for task in background:
                task.cancel()
            await hub.aclose()
            await stop_evaluations(executor)
            if handoff is not None:
                handoff.close()
            await executor.aclose()
            close_shared_sandbox()  # the readers' sandbox (migrations on read): killed, not waited for
            if unfollow is not None:
                unfollow()
            if own_store:
                store.close()

    return lifespan
