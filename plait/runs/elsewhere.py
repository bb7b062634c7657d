"""Waiting for runs executed by other processes (workers): one poll of the store for all the
runs waited on, every `POLL_S`, whoever waits (a batch keeps dozens in flight)."""

from __future__ import annotations

import asyncio

from plait.engine.outcome import RunOutcome
from plait.model.enums import TERMINAL_RUN_STATUSES, RunStatus
from plait.store import Store

POLL_S = 0.25


class RunWaiter:
    """`await waiter.wait(run_id)`: the run's outcome once it has ended (or paused for a person)."""

    def __init__(self, store: Store):
        self.store = store
        self._waiting: dict[str, asyncio.Future[RunOutcome]] = {}
        self._poller: asyncio.Task[None] | None = None

    async def wait(self, run_id: str) -> RunOutcome:
        future = self._waiting.get(run_id)
        if future is None:
            future = self._waiting[run_id] = asyncio.get_running_loop().create_future()
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll())
        return await asyncio.shield(future)

    async def _poll(self) -> None:
        while self._waiting:
            await asyncio.sleep(POLL_S)
            ids = list(self._waiting)
            statuses = await asyncio.to_thread(self.store.runs.statuses, ids)
            for run_id, status in statuses.items():
                if status in TERMINAL_RUN_STATUSES or status == RunStatus.PAUSED:
                    record = await asyncio.to_thread(self.store.runs.get, run_id)
                    if status == RunStatus.PAUSED and record.wake_at is not None:
                        continue  # parked by a WAIT: the workers continue it when it is due
                    future = self._waiting.pop(run_id)
                    if not future.done():
                        future.set_result(RunOutcome(run_id, status, record.output, record.error))
