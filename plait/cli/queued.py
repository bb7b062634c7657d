"""A run handed to workers (`plait run --queue`): created with its message in one transaction,
sent, then followed here through the workers' events until it ends, as if it ran here."""

from __future__ import annotations

import queue
import sys
import time
from contextlib import nullcontext
from typing import Any

import typer

from plait.cli.common import EXIT_FAILED, EXIT_OK, EXIT_PAUSED
from plait.cli.options import Driving

POLL_S = 0.5
EXIT_DETACHED = 130
UNTAKEN_S = 5.0
"""A run still pending this long after its message was sent: say that no worker took it yet."""


def follow(store: Any, settings: Any, run_id: str, how: Driving) -> None:
    """Send the run's message, show its progress, report how it ended (always exits)."""
    from plait.cli.live import LiveView
    from plait.cli.outcome import report_outcome
    from plait.engine.outcome import RunOutcome
    from plait.model.enums import RunStatus
    from plait.worker.app import make_app
    from plait.worker.events import EventFollower, signing_key
    from plait.worker.relay import Relay

    events: queue.SimpleQueue[Any] = queue.SimpleQueue()
    follower = EventFollower(
        settings.broker,
        settings.queue,
        lambda event: events.put(event) if event.run_id == run_id else None,
        signing_key(store),
    )
    follower.wait_ready()
    relay = Relay(store, make_app(settings), settings)
    relay.flush()
    view = None if how.quiet else LiveView(store, run_id)
    ended = {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.PAUSED}
    sent_at, told = time.monotonic(), how.quiet
    try:
        with view if view is not None else nullcontext():
            while True:
                deadline = time.monotonic() + POLL_S
                while (left := deadline - time.monotonic()) > 0:
                    try:
                        event = events.get(timeout=left)
                    except queue.Empty:
                        break
                    if view is not None:
                        view.on_wire(event)
                record = store.runs.get(run_id)
                if record.status in ended and not (record.status == RunStatus.PAUSED and record.wake_at):
                    break
                if store.outbox.unsent():
                    relay.flush()  # the broker was away when the run was created
                if not told and record.status == RunStatus.PENDING and time.monotonic() - sent_at >= UNTAKEN_S:
                    told = True
                    sys.stderr.write(untaken(settings, run_id, time.monotonic() - sent_at))
    except KeyboardInterrupt:
        sys.stderr.write(f"stopped following: run {run_id} goes on on the workers (plait runs show {run_id})\n")
        raise typer.Exit(EXIT_DETACHED) from None
    finally:
        follower.close()
    outcome = RunOutcome(run_id, RunStatus(record.status), record.output, record.error)
    report_outcome(store, outcome, how.json_output, how.quiet)
    codes = {RunStatus.COMPLETED: EXIT_OK, RunStatus.PAUSED: EXIT_PAUSED}
    raise typer.Exit(codes.get(outcome.status, EXIT_FAILED))


def untaken(settings: Any, run_id: str, waited_s: float,
            ctrl_c: str = "Ctrl-C stops following, the run stays queued") -> str:  # fmt: skip
    """The word for a run that no worker has taken yet: where it waits, how to start a worker,
    and what Ctrl-C does here."""
    from plait.redact import redact_url

    broker = redact_url(settings.broker)
    return (f"run {run_id} is waiting in queue '{settings.queue}' on {broker}: no worker has taken it in "
            f"{waited_s:.0f} s. Start one with: plait worker --queue {broker} (and the same --db); "
            f"{ctrl_c}\n")  # fmt: skip
