"""MAP items spread over workers: each item's child run is announced to the workers instead of
being executed by the engine that runs the MAP node.

A worker executing a MAP node writes each item's child run `pending`, with its message in the
outbox (one transaction), and waits for it to end. Any worker with a free place executes it.
So that a MAP never waits for a place nobody will free (every place busy, some of them with
parents waiting for their own items), the parent executes an item itself when no engine has
taken it `grace_s` after it was announced; the run's lease decides who executes it, so an item
is executed once however the race ends. Only MAP spreads: a SUBGRAPH or a LOOP waits for one
child at a time, which another worker would execute no sooner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from plait.engine.outcome import EngineError, RunOutcome
from plait.model.enums import TERMINAL_RUN_STATUSES, RunStatus
from plait.store import RunRecord
from plait.store.faults import transient

if TYPE_CHECKING:
    from plait.engine.ports import RunDriver

ANNOUNCE = "map"
"""The reason the outbox gives for an item's child run."""


@dataclass(frozen=True, slots=True)
class Spread:
    """How an engine spreads MAP items: `nudge()` after announcing (the relay sends the outbox
    at once instead of at its next pass), how long an item waits for another engine before the
    parent executes it, and how often the parent looks at the items it waits for."""

    nudge: Callable[[], None] = lambda: None
    grace_s: float = 1.0
    poll_s: tuple[float, float] = (0.05, 0.5)
    """The first and the longest wait between two looks (doubling in between)."""


def _ended(record: RunRecord) -> RunOutcome | None:
    """The outcome of a child that ended or paused for a person; None while it executes or waits."""
    status = RunStatus(record.status)
    if status in TERMINAL_RUN_STATUSES or (status == RunStatus.PAUSED and record.lease_owner is None):
        return RunOutcome(record.id, status, record.output, record.error)
    return None


async def await_child(engine: RunDriver, spread: Spread, run_id: str) -> RunOutcome:
    """Wait for the announced child `run_id` to end, executing it here when no engine took it
    within `spread.grace_s` (or its engine let it go: a worker killed, or shut down)."""
    announced = time.monotonic()
    delay, longest = spread.poll_s
    while True:
        try:
            record = await asyncio.to_thread(engine.store.runs.get, run_id)
        except Exception as exc:
            if not transient(exc):
                raise
            await asyncio.sleep(longest)  # the database failed this look: the next one tells
            continue
        outcome = _ended(record)
        if outcome is not None:
            return outcome
        live = record.lease_owner is not None and (record.lease_expires_at or 0.0) >= time.time()
        if not live and time.monotonic() - announced >= spread.grace_s:
            try:
                return await engine.run(run_id)
            except EngineError:  # another engine took it a moment ago: wait for it
                pass
        await asyncio.sleep(delay)
        delay = min(delay * 2, longest)
