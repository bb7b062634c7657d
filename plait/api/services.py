"""The service calls an HTTP route makes, in one place, so that every surface over HTTP (the
REST routes under /api and the original PromptGraph API's routes) does a thing the same way.

Each helper is the whole of one operation as the server performs it: the service function
the CLI calls too (`plait.engine`, `plait.evolve`, `plait.store`) plus what only a server
adds (driving the run in the background, announcing stale nodes on the event stream). Routes
only parse their request and shape the result.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from starlette.concurrency import run_in_threadpool

from plait.api.state import ServerState
from plait.engine.events import CorrectionEvent, NodeQueued, NodeStale, RunResumed
from plait.evolve.catalog import parent_updated
from plait.runs.corrections import Correction, Corrections
from plait.runs.start import start_run
from plait.store import Store, StoredGraph, current_activations
from plait.store.errors import NotFoundError

CORRECTION_WAIT_S = 2.0
"""How long a correction waits for a run another correction holds before answering 409."""


async def start_and_launch(
    state: ServerState,
    ref: str,
    run_input: dict[str, Any],
    *,
    stream: bool | list[str] = False,
    version: int | None = None,
) -> str:
    """Create a run of a stored graph at `version`, else the version it runs by default (its
    promoted version, else its latest; 404 unknown graph or version, 422 bad input or a graph
    this server cannot execute) and execute it in the background; its id. `stream`: the nodes
    whose answers its events pass on as they arrive (True: every node)."""
    handoff = state.executor.handoff
    announce = "start" if handoff is not None else None  # written with the run, for the workers
    chosen: str | None = None
    if stream and handoff is not None:  # the workers hear of it before the run exists: whichever takes it knows
        chosen = str(uuid.uuid4())
        await run_in_threadpool(handoff.stream, chosen, stream)
    run_id = await run_in_threadpool(
        start_run,
        state.store,
        ref,
        run_input,
        files=False,
        check=state.executor.preflight,
        llm=state.executor.llm,
        announce=announce,
        run_id=chosen,
        version=version,
    )
    state.executor.launch(run_id, fresh=True, stream=stream)
    return run_id


async def apply_correction(
    state: ServerState, change: Callable[[Corrections], Correction], announce: CorrectionEvent
) -> Correction:
    """Make one correction as the person `announce` names and tell the run's event stream what
    it did, once it is written: `announce` (with the node's newest activation, where its value is
    read), then the nodes it marked stale and queued, and that the run resumes when it does;
    drive the run when the correction left work to execute (a RERUN policy, a rerun, an
    answered review)."""
    by = announce.by
    corrections = Corrections(state.store, by=by, wait_s=CORRECTION_WAIT_S)
    result = await run_in_threadpool(change, corrections)
    current = None
    if announce.node_id is not None:
        current = await run_in_threadpool(_current_id, state.store, result.run_id, announce.node_id)
    state.events.emit(replace(announce, run_id=result.run_id, node_run_id=current, at=time.time()))
    for node_id in result.stale:
        state.events.emit(NodeStale(result.run_id, node_id))
    for node_id in result.queued:
        state.events.emit(NodeQueued(result.run_id, node_id))
    if result.resume:
        state.events.emit(RunResumed(result.run_id, reason="review", by=by))
    if result.needs_run:
        state.executor.launch(result.run_id)
    parent = result.parent
    while parent is not None:  # a child's new output, passed on to the node that started it
        for node_id in parent.stale:
            state.events.emit(NodeStale(parent.run_id, node_id))
        if parent.needs_run:
            state.executor.launch(parent.run_id)
        parent = parent.parent
    return result


def _current_id(store: Store, run_id: str, node_id: str) -> str | None:
    """The id of the node's newest activation (where its full value is read)."""
    current = current_activations(store.runs.node_runs(run_id)).get(node_id)
    return current.id if current is not None else None


def get_graph(store: Store, ref: str, version: int | None = None) -> tuple[StoredGraph, bool]:
    """A graph version by id or slug (default: latest), and whether it is a fork whose parent
    has moved on since the fork. A deleted graph is found only by an explicit version (its runs
    stay readable and name their pinned version)."""
    stored = store.graphs.get(ref, version)
    if stored.deleted_at is not None and version is None:
        raise NotFoundError(f"graph '{ref}' was deleted; ask for a version (?version=N) to read what its runs used")
    return stored, parent_updated(store, stored)


def delete_graph(store: Store, ref: str, *, force: bool = False) -> tuple[StoredGraph, int]:
    """Delete a graph (403 for a system graph; 409 when it has runs, unless `force`): the graph
    as it was, and how many runs keep its pinned versions readable. A graph already deleted is
    not found (404), as for every other change."""
    stored = store.graphs.live(ref)
    kept = store.graph_admin.delete(stored.graph_id, stored.slug, stored.source_type, force=force)
    store.drafts.drop(stored.slug)  # a new graph of that id starts afresh, not from these edits
    return stored, kept
