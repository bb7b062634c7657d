"""Run control over HTTP: pause, resume and cancel.

Built on `RunExecutor` (stopping a run's task makes the engine give the run up: the nodes it
was executing go back to `pending`, the lease is released) and the store's conditional status
writes:
- pause: stop the run's task here (its committed nodes stay), then mark it `paused`. A node
  that was executing is interrupted and runs again on resume.
- resume: drive the run again (`Engine.run`, as `plait resume` does).
- cancel: stop the run's task, then mark it `cancelled` (terminal; it cannot be resumed).
A run another live process is executing is refused (409): stop it where it runs.
"""

from __future__ import annotations

import asyncio

from plait.api.executor import RunExecutor
from plait.engine.events import RunCancelled, RunPaused, RunResumed
from plait.errors import PlaitError, Refusal
from plait.model.enums import TERMINAL_RUN_STATUSES, RunStatus
from plait.store import RunRecord

_LIVE = (RunStatus.PENDING, RunStatus.RUNNING)


class ControlError(PlaitError):
    """The pause, resume or cancel is refused; nothing changed."""


async def pause(executor: RunExecutor, run_id: str) -> RunRecord:
    """Pause the run unless it has ended or another process executes it; pausing twice is no error."""
    record = await _get(executor, run_id)
    if record.status == RunStatus.PAUSED:
        return record  # already: pausing twice is not an error
    _refuse_ended(record, "pause")
    _refuse_elsewhere(executor, record, "pause")
    await executor.stop(run_id)
    changed = await asyncio.to_thread(
        executor.store.runs.set_status, run_id, RunStatus.PAUSED, expected=[*_LIVE, RunStatus.PAUSED]
    )
    record = await _get(executor, run_id)
    if not changed:
        _refuse_ended(record, "pause")
    executor.events.emit(RunPaused(run_id, reason="requested"))
    return record


async def resume(executor: RunExecutor, run_id: str) -> RunRecord:
    """Drive the run again; refused when it has ended or is executing already, here or elsewhere."""
    record = await _get(executor, run_id)
    _refuse_ended(record, "resume")
    if executor.driving(run_id):
        raise ControlError(f"run {run_id} is executing already", "watch it: GET /api/runs/{id}/events")
    _refuse_elsewhere(executor, record, "resume")
    executor.launch(run_id)
    executor.events.emit(RunResumed(run_id, reason="requested"))
    return record


async def cancel(executor: RunExecutor, run_id: str) -> RunRecord:
    """End the run for good (`cancelled`); refused when it has ended or another process executes it."""
    record = await _get(executor, run_id)
    _refuse_ended(record, "cancel")
    _refuse_elsewhere(executor, record, "cancel")
    await executor.stop(run_id)
    error = {"kind": "cancelled", "message": "cancelled by request"}
    changed = await asyncio.to_thread(
        executor.store.runs.set_status,
        run_id,
        RunStatus.CANCELLED,
        expected=[*_LIVE, RunStatus.PAUSED],
        error=error,
    )
    record = await _get(executor, run_id)
    if not changed:
        _refuse_ended(record, "cancel")
    executor.events.emit(RunCancelled(run_id, error=error))
    return record


async def _get(executor: RunExecutor, run_id: str) -> RunRecord:
    return await asyncio.to_thread(executor.store.runs.get, run_id)


def _refuse_ended(record: RunRecord, action: str) -> None:
    if record.status in TERMINAL_RUN_STATUSES:
        raise ControlError(
            f"cannot {action} run {record.id}: it has ended ({record.status})",
            "start a new run, or rerun a node of this one (POST /api/runs/{id}/nodes/{node}/rerun)",
        )


def _refuse_elsewhere(executor: RunExecutor, record: RunRecord, action: str) -> None:
    if executor.held_elsewhere(record):
        raise ControlError(
            f"cannot {action} run {record.id}: another process is executing it ({record.lease_owner})",
            "do it where the run executes, or wait until it ends",
            kind=Refusal.CONFLICT,
        )
