"""/api/runs and /api/node-runs: start, list, inspect, control and compare runs (as
`plait run|resume|runs` do). Runs execute in this server's process (see executor.py)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from plait.api import control
from plait.api.control import ControlError
from plait.api.errors import ApiError
from plait.api.responses import node_fields, run_fields
from plait.api.schemas import (
    MAX_INT,
    NodeRunDetailOut,
    NodeRunOut,
    RunDetailOut,
    RunDiffOut,
    RunOut,
    RunPage,
    RunStatusName,
    StartedOut,
    StartIn,
)
from plait.api.services import start_and_launch
from plait.api.state import ServerState, get_state
from plait.runs.diff import diff_runs
from plait.runs.read import read_run
from plait.store import current_activations
from plait.store.errors import NotFoundError
from plait.store.prefix import MIN_PREFIX, AmbiguousIdError
from plait.store.run_admin import RunEnded, RunInUse

router = APIRouter(tags=["runs"])
_WHOLE_ID = 36
"""Characters of a run id (a UUID): a shorter one is looked up as a prefix."""


def _whole_run_id(state: ServerState, ref: str) -> str:
    """The run id `ref` names, whole or as a unique prefix; errors in the API's words."""
    if len(ref) == _WHOLE_ID:
        return ref
    try:
        return state.store.runs.resolve(ref)
    except AmbiguousIdError as exc:
        raise ApiError(
            409, "ambiguous", str(exc), details=[c[0] for c in exc.candidates], hint="give more characters of the id"
        ) from exc
    except NotFoundError as exc:
        short = f" (a prefix needs at least {MIN_PREFIX} characters)" if len(ref.strip()) < MIN_PREFIX else ""
        raise ApiError(
            404, "not_found", f"no run '{ref}'{short}", hint="GET /api/runs lists the runs with their ids"
        ) from exc


State = Annotated[ServerState, Depends(get_state)]


@router.post("/runs", response_model=StartedOut, status_code=202)
async def start(state: State, body: StartIn) -> StartedOut:
    """Start a run of a stored graph: its promoted version, else its latest (or `version`); it
    executes in the background (watch its events, or poll it). 404 for an unknown graph or
    version, 422 for an input that breaks input_schema or a graph this server cannot execute
    (e.g. no provider for its model calls)."""
    run_id = await start_and_launch(state, body.graph, body.input, stream=body.stream, version=body.version)
    return StartedOut(run_id=run_id, status="pending", run=f"/api/runs/{run_id}", events=f"/api/runs/{run_id}/events")


@router.get("/runs", response_model=RunPage)
def list_runs(
    state: State,
    graph: Annotated[str | None, Query(description="Only runs of this graph (id or slug).")] = None,
    status: Annotated[RunStatusName | None, Query(description="Only runs with this status.")] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    children: Annotated[bool, Query(description="Include child runs (of SUBGRAPH, MAP and LOOP nodes).")] = False,
    evaluations: Annotated[bool, Query(description="Include the runs evaluations made.")] = False,
) -> RunPage:
    """Runs, newest first; child runs only with `children`, the runs evaluations made only with `evaluations`."""
    runs = state.store.runs.list(
        graph=graph, status=status, limit=limit + 1, offset=offset, children=children, evaluations=evaluations
    )
    items = [RunOut(**run_fields(r, state.executor.driving(r.id))) for r in runs[:limit]]
    return RunPage(items=items, offset=offset, limit=limit, next_offset=offset + limit if len(runs) > limit else None)


@router.get("/runs/{run_id}", response_model=RunDetailOut)
def get_run(
    state: State,
    run_id: str,
    raw: Annotated[bool, Query(description="Outputs as stored, without migrating older schema versions.")] = False,
) -> RunDetailOut:
    """A run with every node activation: status, attempts, tokens, cost, timings, and the
    effective output read at the graph's current schema versions (`raw`: as stored). An output
    no migration brings forward is given as stored, with an `outdated` notice. `run_id` may be
    a unique prefix of the id (at least 4 characters), as pages and the CLI show ids short: the
    answer's `id` is the whole one."""
    run_id = _whole_run_id(state, run_id)
    view = read_run(state.store, run_id, raw=raw)
    run, outputs = view.run, view.outputs
    return RunDetailOut(
        **run_fields(run, state.executor.driving(run_id)),
        graph_latest_version=view.latest_version,
        input=run.input,
        output=run.output,
        error=run.error,
        stale=view.stale,
        decisions=[d.as_json() for d in state.store.decisions.of_run(run_id)],
        nodes=[
            NodeRunOut(
                **node_fields(
                    n,
                    current=view.is_current(n),
                    effective=outputs.values[n.id],
                    migrated=outputs.migrated.get(n.id),
                    outdated=outputs.outdated.get(n.id),
                )
            )
            for n in view.nodes
        ],
    )


@router.post("/runs/{run_id}/pause", response_model=RunOut)
async def pause(state: State, run_id: str) -> RunOut:
    """Stop executing the run and mark it paused (a node that was executing runs again on
    resume); pausing a paused run changes nothing. 409 for a run that has ended."""
    record = await control.pause(state.executor, run_id)
    return RunOut(**run_fields(record, state.executor.driving(run_id)))


@router.post("/runs/{run_id}/resume", response_model=RunOut, status_code=202)
async def resume(state: State, run_id: str) -> RunOut:
    """Continue a paused, interrupted or pending run in the background (like `plait resume`);
    a run waiting at a HUMAN_REVIEW pauses again until the review is answered."""
    record = await control.resume(state.executor, run_id)
    return RunOut(**run_fields(record, state.executor.driving(run_id)))


@router.post("/runs/{run_id}/cancel", response_model=RunOut)
async def cancel(state: State, run_id: str) -> RunOut:
    """Stop the run for good (`cancelled`); 409 for a run that has ended."""
    record = await control.cancel(state.executor, run_id)
    return RunOut(**run_fields(record, state.executor.driving(run_id)))


class RunDeletedOut(BaseModel):
    """A deleted run, and how much was deleted with it."""

    run_id: str
    deleted: bool
    status: str = Field(description="The run's status when it was deleted.")
    node_runs: int = Field(description="Node runs deleted with it.")
    ledger_versions: int = Field(description="Field ledger versions deleted with it.")
    cache_entries: int = Field(description="Cached model answers its calls had produced, deleted with it.")


@router.delete("/runs/{run_id}", response_model=RunDeletedOut)
async def delete_run(
    state: State,
    run_id: str,
    force: Annotated[bool, Query(description="Delete a run that has ended (completed, failed, cancelled).")] = False,
) -> RunDeletedOut:
    """Delete a run with its node runs, ledger versions and the cached answers it produced, in one
    transaction. 409 for a run being executed (cancel it first) and, without `force`, for a run
    that has ended."""
    if state.executor.driving(run_id):
        raise ControlError(
            f"cannot delete run {run_id}: this server is executing it",
            "cancel it first (POST /api/runs/{id}/cancel), then delete it",
        )
    try:
        gone = await run_in_threadpool(state.store.run_admin.delete, run_id, force=force)
    except RunEnded as exc:
        raise ControlError(str(exc), "send force=true to delete it anyway: DELETE /api/runs/{id}?force=true") from None
    except RunInUse as exc:
        raise ControlError(str(exc), "stop it where it executes, or wait for it to end; then delete it") from None
    return RunDeletedOut(deleted=True, **asdict(gone))


@router.get("/runs/{run_a}/diff/{run_b}", response_model=RunDiffOut)
def diff(state: State, run_a: str, run_b: str) -> RunDiffOut:
    """Two runs node by node (same or different graph versions), like `plait runs diff --json`."""
    return RunDiffOut.model_validate(diff_runs(state.store, run_a, run_b).to_json())


@router.get("/node-runs/{node_run_id}", response_model=NodeRunDetailOut, tags=["runs"])
def get_node_run(state: State, node_run_id: str) -> NodeRunDetailOut:
    """One node activation with its input snapshot (rendered prompts, tools, response_format,
    context slice, model config) and its raw and effective output (as stored)."""
    store = state.store
    record = store.runs.node_run(node_run_id)
    newest = current_activations(store.runs.node_runs(record.run_id))
    return NodeRunDetailOut(
        **node_fields(record, current=newest[record.node_id].id == record.id, effective=record.effective_output),
        run_id=record.run_id,
        downstream_policy=record.downstream_policy,
        input_snapshot=record.input_snapshot,
    )
