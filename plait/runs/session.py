"""A run session: what one command or process drives runs with.

Every surface that executes runs (a command, the HTTP service, a worker) opens a session
instead of building the engine itself, so each gets the same wiring: a child run that continued
on its own after a correction passes its output on to its parent (`plait.runs.children.settle`),
and a run parked by a WAIT node, or stopped by a database that failed for a moment, is driven
again until it ends (`finish`). One session builds one engine, so a command that checks a graph
before it starts a run and then executes it builds one engine and plans the graph once.

A session over the process's model for runs recorded on other models is `RunEngines`
(`plait.runs.engines`), which opens its engines the same way.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from plait.engine.events import EventBus
from plait.engine.outcome import RunOutcome
from plait.engine.runner import Engine
from plait.engine.streaming import StreamChoice as StreamChoice  # what `stream` takes, for the surfaces
from plait.llm.provider import Provider
from plait.model.enums import RunStatus
from plait.model.graph import GraphDef
from plait.runs.children import settle
from plait.store import Store, StoredGraph
from plait.store.faults import RETRY_S, StoreUnavailable, transient

DATABASE_PAUSE_S = 1.0
"""How long `finish` waits before driving a run again that a failing database stopped."""


def open_engine(store: Store, provider: Provider | None, **options: Any) -> Engine:
    """The engine a session drives runs with: `options` are the engine's own (`Engine`), and the
    child-run settling every driver needs is wired in."""
    return Engine(store, provider, child_settled=settle(store), **options)


class RunSession:
    """One engine over one store and one model, for one command or process.

    `options` are the engine's (`Engine`): the response cache, the MCP servers, where graph
    references may be looked up, whether a node lost with its process may run again."""

    def __init__(self, store: Store, provider: Provider | None, **options: Any) -> None:
        self.store = store
        self.engine = open_engine(store, provider, **options)

    @property
    def events(self) -> EventBus:
        """What the engine announces (node and run events), for a live view to subscribe to."""
        return self.engine.events

    def check_executable(self, graph: StoredGraph) -> None:
        """Raise EngineError when this session could not execute a run of `graph`: a refusal
        before the run exists leaves nothing behind."""
        self.engine.check_executable(graph)

    def check_graph(self, graph: GraphDef) -> None:
        """Raise EngineError when this session could not execute `graph`, validated but not stored."""
        self.engine.check_graph(graph)

    def stream(self, run_id: str, nodes: bool | str | Sequence[str]) -> None:
        """Pass on the answers of `nodes` (True: every node) in the run and its child runs as
        they arrive (`NodeDelta` events on `events`), besides the nodes the graph marks
        `stream: true`, until the run ends."""
        self.engine.stream(run_id, StreamChoice.of(nodes))

    async def drive(self, run_id: str) -> RunOutcome:
        """Execute the run until it ends, pauses or waits for a person or a WAIT node."""
        return await self.engine.run(run_id)

    async def finish(self, run_id: str, on_wait: Callable[[str, float], None] | None = None) -> RunOutcome:
        """Drive the run until it ends or waits for a person (`finish`)."""
        return await finish(self.store, self.drive, run_id, on_wait)

    async def aclose(self) -> None:
        """Close the engine: its provider, its sandbox and its MCP sessions."""
        await self.engine.aclose()


async def finish(
    store: Store,
    drive: Callable[[str], Awaitable[RunOutcome]],
    run_id: str,
    on_wait: Callable[[str, float], None] | None = None,
) -> RunOutcome:
    """Drive the run (`drive`, an engine's `run`); when WAIT nodes park it, wait here until it
    is due (`on_wait(run_id, wake_at)` first, when given) and drive it again. The run holds no
    lease meanwhile: stopped, it stays parked and any engine continues it. A run the database
    stopped (a read failed under a node) is driven again, as long as the database keeps failing
    for less than `RETRY_S`."""
    failing: float | None = None
    while True:
        try:
            outcome = await drive(run_id)
        except Exception as exc:  # the database failed under the engine: drive the run again, for a while
            failing = failing or time.monotonic()
            if not transient(exc):
                raise
            if time.monotonic() - failing > RETRY_S:
                raise StoreUnavailable(
                    f"the database failed for {RETRY_S:.0f} s ({exc}); the run is left as it was"
                ) from exc
            await asyncio.sleep(DATABASE_PAUSE_S)
            continue
        failing = None
        wake_at = store.runs.get(run_id).wake_at if outcome.status == RunStatus.PAUSED else None
        if wake_at is None:
            return outcome
        if on_wait is not None:
            on_wait(run_id, wake_at)
        await asyncio.sleep(max(0.0, wake_at - time.time()))
