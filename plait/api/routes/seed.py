"""The ten routes of the original PromptGraph API at their exact paths (`GET
/PromptGraphDefListRoute` … `POST /PromptGraphNodeRerunRoute`), so that a client written against
that API keeps working.

Each route is a thin adapter: it reads that API's parameters, calls the service the /api
routes and the CLI call (`plait.api.services`, `plait.evolve`, `plait.engine`), and answers in
that API's field names (`plait.api.seed_schemas`). Auth and errors are the /api ones. What
differs from the original API, and why, is listed in docs/http.md.
"""

from __future__ import annotations

import re
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from plait.api.auth import CallerDep
from plait.api.schemas import SourceTypeName
from plait.api.seed_schemas import (
    PromptGraphDef,
    PromptGraphDefCreateIn,
    PromptGraphDefDeleted,
    PromptGraphDefDeleteIn,
    PromptGraphDefForkIn,
    PromptGraphDefPage,
    PromptGraphDefUpdateIn,
    PromptGraphNodeCorrected,
    PromptGraphNodeOverrideIn,
    PromptGraphNodeRerunIn,
    PromptGraphRunDetail,
    PromptGraphRunStarted,
    PromptGraphRunStartIn,
    corrected_out,
    def_listed,
    def_out,
    node_run_out,
    run_detail_out,
)
from plait.api.services import apply_correction, delete_graph, get_graph, start_and_launch
from plait.api.state import ServerState, get_state
from plait.compile.dump import graph_to_data
from plait.engine.events import NodeOverridden, NodeRerun, NodeReviewed
from plait.errors import Refusal
from plait.evolve.catalog import list_graphs
from plait.evolve.fork import ForkError, fork_graph
from plait.evolve.upload import UploadMode, save_upload
from plait.model import SourceType
from plait.model.enums import NodeStatus
from plait.model.nodes import NodeType
from plait.model.output_meta import strip_meta
from plait.runs.corrections import Correction
from plait.runs.read import read_run
from plait.store import NotFoundError, Store, current_activations
from plait.store.graphs import MANAGED_FIELDS

router = APIRouter(tags=["original API"])
State = Annotated[ServerState, Depends(get_state)]
IdQuery = Annotated[str, Query(alias="id", min_length=1, description="A UUID (a graph's slug works too).")]


# -- graph definitions -----------------------------------------------------------------------------------


@router.get("/PromptGraphDefListRoute", response_model=PromptGraphDefPage)
def def_list(
    state: State,
    source_type: Annotated[SourceTypeName | None, Query(description="Only graphs of this source type.")] = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> PromptGraphDefPage:
    """Paged list of graph definitions, optionally of one source_type (the latest version of each,
    without nodes and schemas: PromptGraphDefGetRoute has those)."""
    summaries = list_graphs(state.store, source_type=source_type)
    items = [def_listed(s.listed, s.parent_updated) for s in summaries]
    return PromptGraphDefPage(items=items[offset : offset + limit], total=len(items), offset=offset, limit=limit)


@router.get("/PromptGraphDefGetRoute", response_model=PromptGraphDef)
def def_get(
    state: State,
    graph_id: IdQuery,
    version: Annotated[int | None, Query(ge=1, description="An older version (default: the latest).")] = None,
) -> PromptGraphDef:
    """One graph definition with its nodes, edges and schema_registry."""
    stored, parent_updated = get_graph(state.store, graph_id, version)
    return def_out(stored, parent_updated)


@router.post("/PromptGraphDefCreateRoute", response_model=PromptGraphDef)
def def_create(state: State, body: PromptGraphDefCreateIn) -> PromptGraphDef:
    """Create a user graph (version 1), validated like a graph file: 422 with every problem."""
    content = {**body.content(), "id": body.id or _new_slug(state.store, body.name)}
    saved = save_upload(state.store, content, mode=UploadMode.CREATE)
    return def_out(saved.stored, False)


@router.post("/PromptGraphDefUpdateRoute", response_model=PromptGraphDef)
def def_update(state: State, body: PromptGraphDefUpdateIn) -> PromptGraphDef:
    """Save a new version (version +1, schema_version derived from what changed); fields left out
    keep their value, unchanged content keeps the version. System graphs are read-only (403)."""
    current = state.store.graphs.get(body.id)
    content = {k: v for k, v in graph_to_data(current.graph).items() if k not in MANAGED_FIELDS}
    if content.get("source_type") == SourceType.SYSTEM:
        del content["source_type"]  # the store then refuses it as a system graph, with how to fork it
    content.update(body.content())
    saved = save_upload(state.store, content, mode=UploadMode.UPDATE, ref=current.graph_id)
    _, parent_updated = get_graph(state.store, saved.stored.graph_id)
    return def_out(saved.stored, parent_updated)


@router.post("/PromptGraphDefDeleteRoute", response_model=PromptGraphDefDeleted)
def def_delete(state: State, body: PromptGraphDefDeleteIn) -> PromptGraphDefDeleted:
    """Delete a graph: 403 for a system graph, 409 for a graph with runs unless `force`."""
    stored, kept = delete_graph(state.store, body.id, force=body.force)
    return PromptGraphDefDeleted(id=stored.graph_id, slug=stored.slug, deleted=True, runs_kept=kept)


@router.post("/PromptGraphDefForkRoute", response_model=PromptGraphDef)
def def_fork(state: State, body: PromptGraphDefForkIn) -> PromptGraphDef:
    """Deep-copy a graph into an editable fork (system_fork for a system graph, version 1) that
    remembers its parent; 409 when the `slug` asked for is taken (without one, a free slug is made
    from the parent's)."""
    try:
        stored = fork_graph(state.store, body.id, body.slug)
    except ForkError as exc:
        if exc.kind == Refusal.CONFLICT:  # the id is taken; in this route's words, the fork's id is its `slug`
            exc.hint = "choose another slug for the fork with `slug`, or leave it out to get a free one"
        raise
    return def_out(stored, False)


def _new_slug(store: Store, name: str | None) -> str:
    """A free graph slug made from the name (the original API's graphs have no readable id)."""
    base = re.sub(r"[^a-z0-9]+", "_", (name or "").lower()).strip("_")[:64] or "graph"
    try:
        store.graphs.get(base)
    except NotFoundError:
        return base
    return f"{base}_{uuid.uuid4().hex[:8]}"


# -- runs ------------------------------------------------------------------------------------------------


@router.post("/PromptGraphRunStartRoute", response_model=PromptGraphRunStarted)
async def run_start(state: State, body: PromptGraphRunStartIn) -> PromptGraphRunStarted:
    """Start a run of a graph (its promoted version, else its latest); it executes in the background (poll
    PromptGraphRunGetRoute). 404 unknown graph, 422 input that breaks the graph's input_schema."""
    run_id = await start_and_launch(state, body.prompt_graph_def_id, body.initial_context)
    record = await run_in_threadpool(state.store.runs.get, run_id)
    return PromptGraphRunStarted(
        run_id=run_id,
        prompt_graph_def_id=record.graph_id,
        graph_def_ver=record.graph_version,
        schema_version=record.schema_version,
        status=str(record.status),
    )


@router.get("/PromptGraphRunGetRoute", response_model=PromptGraphRunDetail)
def run_get(
    state: State,
    run_id: IdQuery,
    raw: Annotated[bool, Query(description="Outputs as stored, without migrating older schema versions.")] = False,
) -> PromptGraphRunDetail:
    """A run with the current PromptNodeRun of every node (status, input snapshot, output,
    override, tokens, cost)."""
    return run_detail_out(read_run(state.store, run_id, raw=raw), state.executor.driving(run_id))


# -- corrections -----------------------------------------------------------------------------------------


@router.post("/PromptGraphNodeOverrideRoute", response_model=PromptGraphNodeCorrected)
async def node_override(state: State, caller: CallerDep, body: PromptGraphNodeOverrideIn) -> PromptGraphNodeCorrected:
    """Correct a node's output (output_json is kept) and apply downstream_policy: KEEP, INVALIDATE
    (direct downstream stale), RERUN, RERUN_ALL. On a HUMAN_REVIEW the run waits at, this is the
    answer and the run continues (the original API has no review route). 422 with the schema
    errors for a value that breaks the node's out-edge schemas; 409 for a node with no output yet."""
    run_id, node_id, value = body.prompt_graph_run_id, body.node_def_id, body.override_json
    waiting, reviewed = await run_in_threadpool(_under_review, state.store, run_id, node_id)
    if waiting:
        approve = strip_meta(value) == strip_meta(reviewed)
        answer = None if approve else value
        note = body.override_note
        result = await apply_correction(
            state,
            lambda c: c.review(run_id, node_id, answer, approve=approve, note=note),
            NodeReviewed(run_id, node_id, approved=approve, note=note, output=answer, by=caller.by),
        )
    else:
        policy, note = body.downstream_policy, body.override_note
        result = await apply_correction(
            state,
            lambda c: c.override(run_id, node_id, value, policy=policy, note=note),
            NodeOverridden(run_id, node_id, output=value, policy=str(policy), note=note, by=caller.by),
        )
    return await _corrected(state, result, node_id, review=waiting)


@router.post("/PromptGraphNodeRerunRoute", response_model=PromptGraphNodeCorrected)
async def node_rerun(state: State, caller: CallerDep, body: PromptGraphNodeRerunIn) -> PromptGraphNodeCorrected:
    """Run a node again (a new activation) and, unless `downstream` is false, everything after it;
    with `downstream: false` its direct downstream becomes stale. 409 while the run is busy."""
    run_id, node_id = body.prompt_graph_run_id, body.node_def_id
    result = await apply_correction(
        state,
        lambda c: c.rerun(run_id, node_id, downstream=body.downstream),
        NodeRerun(run_id, node_id, downstream=body.downstream, by=caller.by),
    )
    return await _corrected(state, result, node_id)


def _under_review(store: Store, run_id: str, node_id: str) -> tuple[bool, Any]:
    """Is the run waiting at HUMAN_REVIEW `node_id` (or at a node its repair hook escalated to a
    person), and on what value (404 for an unknown run)."""
    current = current_activations(store.runs.node_runs(run_id)).get(node_id)
    snapshot = current.input_snapshot if current is not None else None
    if current is None or current.status != NodeStatus.PENDING or snapshot is None:
        return False, None
    return snapshot.get("node_type") == NodeType.HUMAN_REVIEW or "escalated" in snapshot, snapshot.get("value")


async def _corrected(
    state: ServerState, result: Correction, node_id: str, *, review: bool = False
) -> PromptGraphNodeCorrected:
    # raw: reading the answer must not fail (a migration error) once the correction is written
    view = await run_in_threadpool(lambda: read_run(state.store, result.run_id, raw=True))
    record = view.current.get(node_id)
    node_run = node_run_out(record, view.outputs.values[record.id]) if record is not None else None
    return corrected_out(result, node_id, node_run, state.executor.driving(result.run_id), review=review)
