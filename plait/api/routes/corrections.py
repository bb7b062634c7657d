"""/api/runs/{id}/nodes/{node}/…: a person's corrections (`plait override|rerun|review|rollback`).

The checks and writes are `plait.runs.corrections.Corrections`, as for the CLI; what a
correction leaves to execute is driven in the background by this server, and what it did is
announced on the run's event stream."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends

from plait.api.auth import CallerDep
from plait.api.responses import correction_out
from plait.api.schemas import CorrectionOut, OverrideIn, RerunIn, ReviewApprove, ReviewIn, ReviewValue, RollbackIn
from plait.api.services import apply_correction
from plait.api.state import ServerState, get_state
from plait.engine.events import CorrectionEvent, NodeOverridden, NodeRerun, NodeReviewed, RunRolledBack
from plait.runs.corrections import Correction, Corrections
from plait.runs.escalations import override as override_or_answer

router = APIRouter(prefix="/runs/{run_id}", tags=["corrections"])
State = Annotated[ServerState, Depends(get_state)]


async def _apply(
    state: ServerState, change: Callable[[Corrections], Correction], announce: CorrectionEvent
) -> CorrectionOut:
    result = await apply_correction(state, change, announce)
    return correction_out(result, state.executor.driving(result.run_id))


@router.post("/nodes/{node_id}/override", response_model=CorrectionOut)
async def override(state: State, caller: CallerDep, run_id: str, node_id: str, body: OverrideIn) -> CorrectionOut:
    """Correct a node's output (the original is kept); `policy` decides what happens downstream.
    422 with the schema errors when the value breaks the node's out-edge schemas."""
    announce = NodeOverridden(run_id, node_id, output=body.value, policy=str(body.policy), note=body.note, by=caller.by)
    return await _apply(
        state,
        lambda c: override_or_answer(c, run_id, node_id, body.value, policy=body.policy, note=body.note),
        announce,
    )


@router.post("/nodes/{node_id}/rerun", response_model=CorrectionOut)
async def rerun(
    state: State, caller: CallerDep, run_id: str, node_id: str, body: RerunIn | None = None
) -> CorrectionOut:
    """Run a node again (a new activation); without `downstream` its direct downstream becomes stale."""
    downstream = body.downstream if body is not None else False
    announce = NodeRerun(run_id, node_id, downstream=downstream, by=caller.by)
    return await _apply(state, lambda c: c.rerun(run_id, node_id, downstream=downstream), announce)


@router.post("/nodes/{node_id}/review", response_model=CorrectionOut)
async def review(state: State, caller: CallerDep, run_id: str, node_id: str, body: ReviewIn) -> CorrectionOut:
    """Answer a HUMAN_REVIEW the run is paused at (approve, or a corrected value); the run continues."""
    value = body.value if isinstance(body, ReviewValue) else None
    approve = isinstance(body, ReviewApprove)
    announce = NodeReviewed(run_id, node_id, approved=approve, note=body.note, output=value, by=caller.by)
    return await _apply(state, lambda c: c.review(run_id, node_id, value, approve=approve, note=body.note), announce)


@router.post("/rollback", response_model=CorrectionOut)
async def rollback(state: State, caller: CallerDep, run_id: str, body: RollbackIn) -> CorrectionOut:
    """Restore a value (or one field) and its frozen state to an earlier ledger version; the
    nodes that read a newer version become stale (with `cascade`: they run again, and what
    follows them)."""
    owner, _, field_name = body.target.partition(".")
    node_id = None if owner == "input" else owner
    announce = RunRolledBack(
        run_id, node_id, target=body.target, to_version=body.to_version, cascade=body.cascade, by=caller.by
    )
    return await _apply(
        state,
        lambda c: c.rollback(run_id, owner, field_name or None, body.to_version, cascade=body.cascade),
        announce,
    )
