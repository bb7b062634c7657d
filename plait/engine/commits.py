"""Group commit: the writes of the nodes that finish in one event-loop turn, in one transaction.

An engine drives many runs on one loop. Node results arrive in bursts (64 model calls in
flight finish within milliseconds of each other), and committing each alone would spend most
of the engine's time in BEGIN/COMMIT. A unit submitted here is written at the end of the
current loop turn together with the other units submitted in that turn, up to `MAX_UNITS`
per transaction (the rest go in the next turns, so one commit holds the loop for about a
millisecond at most, not ten); the submitter awaits its own results. Nothing executes before
its claim is committed, and nothing is reported finished before its result is.

A transaction that fails for a fault of the database (a dropped connection, a restart, SQLite's
lock held too long: `plait.store.faults.transient`) is tried again on a fresh connection, with
the same units, for up to `RETRY_S`: a model's answer that arrived is kept and written when the
database takes it, and no run fails for a fault a retry survives.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from plait.store.faults import RETRY_S, StoreUnavailable, transient
from plait.store.node_writes import NodeWriter
from plait.store.writes import Unit

MAX_UNITS = 16
"""Units per transaction. Beyond this the BEGIN/COMMIT saved per unit is small, and a longer
transaction delays the calls whose answers arrive meanwhile (docs/performance.md, "Run 6")."""
RETRY_FIRST_PAUSE_S = 0.02
RETRY_MAX_PAUSE_S = 1.0
"""Pauses between attempts while the database fails: short, so that a dropped connection costs
a node almost nothing, and at most a second, so that a database back after a restart is found
before the run's lease (renewed meanwhile) could run out."""
log = logging.getLogger("plait.engine")


class GroupCommit:
    """The engine's one way to write node transitions: units submitted in the same loop turn
    share a transaction.

    What a caller can rely on:
    - `submit(unit)` writes nothing at once. The unit is committed at the end of the current
      loop turn with the other units submitted in that turn, at most `MAX_UNITS` per
      transaction; the rest go in the following turns, in the order they were submitted.
    - The returned future is resolved only after the transaction holding the unit committed:
      with the unit's results, one per write, in order (None for the writes left out after a
      `Finish` or `EndRun` that changed nothing), or with the error that this unit alone
      raised, in which case nothing of it was written and the other units are not affected.
    - When the database fails for a fault a retry survives, the units wait and are committed in
      a later transaction, for up to `RETRY_S`; after that their futures get `StoreUnavailable`.
      A fault of any other kind gives every future of that transaction the error.
    - Cancelling a submitter does not withdraw its unit: once submitted, its writes stand.
    Use it from one event loop (`submit` needs a running loop); it is not thread-safe.
    """

    def __init__(self, writer: NodeWriter) -> None:
        self._writer = writer
        self._pending: list[tuple[Unit, asyncio.Future[list[Any]]]] = []
        self._scheduled = False
        self._failing_since: float | None = None
        """When the database began failing the writes (None: the last transaction went through)."""
        self._attempts = 0

    def submit(self, unit: Unit) -> asyncio.Future[list[Any]]:
        """Queue `unit` for the commit at the end of this loop turn; the future holds its results."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Any]] = loop.create_future()
        self._pending.append((unit, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        return future

    def _flush(self) -> None:
        batch, self._pending = self._pending[:MAX_UNITS], self._pending[MAX_UNITS:]
        try:
            outcomes = self._writer.write([unit for unit, _ in batch])
        except BaseException as exc:  # the writer isolates unit errors; this is a bug or the process stopping
            self._next(0.0)
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        again = [(entry, outcome) for entry, outcome in zip(batch, outcomes, strict=True) if _retried(outcome)]
        delay = self._backoff(bool(again))
        if delay is None:  # failing for RETRY_S: the runs stop here, resumable
            outcomes = [_given_up(outcome) for outcome in outcomes]
            again = []
        else:
            self._pending[:0] = [entry for entry, _ in again]
        self._next(delay or 0.0)
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if future.done() or (delay is not None and _retried(outcome)):
                continue  # cancelled submitter: its writes stand (claims are re-adopted on resume); or tried again
            if isinstance(outcome, Exception):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    def _backoff(self, failed: bool) -> float | None:
        """How long to wait before the next transaction: 0 when this one went through, a growing
        pause while the database fails, None once it has failed for `RETRY_S`."""
        if not failed:
            self._failing_since, self._attempts = None, 0
            return 0.0
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        failing = now - self._failing_since
        if failing >= RETRY_S:
            self._failing_since, self._attempts = None, 0
            return None
        self._attempts += 1
        log.warning("the database failed a commit (attempt %d, %.1f s so far); trying again", self._attempts, failing)
        return float(min(RETRY_MAX_PAUSE_S, RETRY_FIRST_PAUSE_S * 2 ** min(self._attempts - 1, 10)))

    def _next(self, delay: float) -> None:
        """Schedule the next transaction when units wait (after `delay`), else wait for a submit."""
        if not self._pending:
            self._scheduled = False
            return
        loop = asyncio.get_running_loop()
        if delay > 0:
            loop.call_later(delay, self._flush)
        else:
            loop.call_soon(self._flush)


def _retried(outcome: list[Any] | Exception) -> bool:
    return isinstance(outcome, Exception) and transient(outcome)


def _given_up(outcome: list[Any] | Exception) -> list[Any] | Exception:
    if not _retried(outcome):
        return outcome
    return StoreUnavailable(
        f"the database did not take the engine's writes for {RETRY_S:.0f} s ({outcome}); the run is left as it "
        "was, and continues where it stopped when it is resumed"
    )
