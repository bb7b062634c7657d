"""/api/schedules: cron schedules of stored graphs (as `plait schedules` does). They fire while
a scheduler runs: this server's, or a `plait worker --beat`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from plait.api.schedule_schemas import FiringOut, ScheduleIn, ScheduleOut
from plait.api.state import ServerState, get_state
from plait.runs.schedules import add_schedule, pause, resume
from plait.store.schedules import ScheduleRecord

router = APIRouter(prefix="/schedules", tags=["schedules"])
State = Annotated[ServerState, Depends(get_state)]


def _out(record: ScheduleRecord, firings: list[tuple[float, str]] | None = None) -> ScheduleOut:
    data = record.as_json()
    data.pop("deleted_at")
    listed = [FiringOut(fire_at=at, run_id=run_id) for at, run_id in firings] if firings is not None else None
    return ScheduleOut(**data, firings=listed)


@router.get("", response_model=list[ScheduleOut])
def list_schedules(state: State) -> list[ScheduleOut]:
    """Every schedule, oldest first."""
    return [_out(s) for s in state.store.schedules.list()]


@router.post("", response_model=ScheduleOut, status_code=201)
def create_schedule(state: State, body: ScheduleIn) -> ScheduleOut:
    """A new active schedule; 422 for a cron, time zone or input the graph refuses."""
    made = add_schedule(state.store, body.graph, body.cron, body.input, catch_up=body.catch_up,
                        timezone=body.timezone, files=False)  # fmt: skip
    return _out(made)


@router.get("/{schedule_id}", response_model=ScheduleOut)
def get_schedule(state: State, schedule_id: str) -> ScheduleOut:
    """One schedule with its newest firings and their runs."""
    found = state.store.schedules.get(schedule_id)
    return _out(found, state.store.schedules.firings(found.id))


@router.post("/{schedule_id}/pause", response_model=ScheduleOut)
def pause_schedule(state: State, schedule_id: str) -> ScheduleOut:
    """Stop firing (nothing missed meanwhile is caught up on resume)."""
    return _out(pause(state.store, schedule_id))


@router.post("/{schedule_id}/resume", response_model=ScheduleOut)
def resume_schedule(state: State, schedule_id: str) -> ScheduleOut:
    """Fire again from the next instant on."""
    return _out(resume(state.store, schedule_id))


@router.delete("/{schedule_id}", response_model=ScheduleOut)
def delete_schedule(state: State, schedule_id: str) -> ScheduleOut:
    """Delete a schedule (its past runs stay)."""
    return _out(state.store.schedules.delete(schedule_id))
