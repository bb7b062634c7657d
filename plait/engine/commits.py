"""Group commit: the writes of the nodes that finish in one event-loop turn, in one transaction.

An engine drives many runs on one loop. Node results arrive in bursts (64 model calls in
flight finish within milliseconds of each other), and committing each alone would spend most
of the engine's time in BEGIN/COMMIT. A unit submitted here is written at the end of the
current loop turn together with the other units submitted in that turn, up to `MAX_UNITS`
per transaction (the rest go in the next turns, so one commit holds the loop for about a
millisecond at most, not ten); the submitter awaits its own results. Nothing executes before
its claim is committed, and nothing is reported finished before its result is.
"""

from __future__ import annotations

import asyncio
from typing import Any

from plait.store.node_writes import NodeWriter, Unit

MAX_UNITS = 16
"""Units per transaction. Beyond this the BEGIN/COMMIT saved per unit is small, and a longer
transaction delays the calls whose answers arrive meanwhile (docs/performance.md, "Run 6")."""


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
    - When the database itself fails, every future of that transaction gets the error.
    - Cancelling a submitter does not withdraw its unit: once submitted, its writes stand.
    Use it from one event loop (`submit` needs a running loop); it is not thread-safe.
    """

    def __init__(self, writer: NodeWriter) -> None:
        self._writer = writer
        self._pending: list[tuple[Unit, asyncio.Future[list[Any]]]] = []
        self._scheduled = False

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
        if self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        else:
            self._scheduled = False
        try:
            outcomes = self._writer.write([unit for unit, _ in batch])
        except BaseException as exc:  # the writer isolates unit errors; this is the database being gone
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if future.done():  # its submitter was cancelled; the writes stand (claims are re-adopted on resume)
                continue
            if isinstance(outcome, Exception):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
