"""A run handed to workers (`plait run --queue`): created with its message in one transaction,
sent, then followed here through the workers' events until it ends, as if it ran here."""

from __future__ import annotations

import queue
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
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
    from plait.worker.app import make_app
    from plait.worker.relay import Relay

    relay = Relay(store, make_app(settings), settings)
    _follow(store, settings, run_id, how, relay)


def watch(store: Any, settings: Any | None, run_id: str, how: Driving) -> None:
    """Show the progress of a run another process executes, until it stops (always exits):
    with workers, their events (the answers they stream too); else what the store says of its
    nodes, read every `POLL_S`."""
    _follow(store, settings, run_id, how, None)


def _follow(store: Any, settings: Any | None, run_id: str, how: Driving, relay: Any | None) -> None:
    """Follow the run until it ends or pauses for a person, then report it; `relay`: the run's
    message to send (and send again while the broker was away)."""
    from plait.cli.outcome import report_outcome
    from plait.engine.outcome import RunOutcome
    from plait.model.enums import RunStatus

    events: queue.SimpleQueue[Any] = queue.SimpleQueue()
    follower = _listen(store, settings, run_id, how, events.put) if settings is not None else None
    if relay is not None:
        relay.flush()
    view, polled = _view(run_id, how), _Polled(store, run_id) if settings is None else None
    ended = {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.PAUSED}
    sent_at, told = time.monotonic(), how.quiet or relay is None
    try:
        with view if isinstance(view, AbstractContextManager) else nullcontext():
            while True:
                for event in _gathered(events, POLL_S) if polled is None else polled.changes(POLL_S):
                    if view is not None:
                        view.on_wire(event)
                record = store.runs.get(run_id)
                if record.status in ended and not (record.status == RunStatus.PAUSED and record.wake_at):
                    break
                if relay is not None and store.outbox.unsent():
                    relay.flush()  # the broker was away when the run was created
                if not told and record.status == RunStatus.PENDING and time.monotonic() - sent_at >= UNTAKEN_S:
                    told = True
                    sys.stderr.write(untaken(settings, run_id, time.monotonic() - sent_at))
    except KeyboardInterrupt:
        sys.stderr.write(f"stopped following: run {run_id} goes on where it executes (plait runs show {run_id})\n")
        raise typer.Exit(EXIT_DETACHED) from None
    finally:
        if follower is not None:
            follower.close()
    outcome = RunOutcome(run_id, RunStatus(record.status), record.output, record.error)
    report_outcome(store, outcome, how.json_output, how.quiet)
    codes = {RunStatus.COMPLETED: EXIT_OK, RunStatus.PAUSED: EXIT_PAUSED}
    raise typer.Exit(codes.get(outcome.status, EXIT_FAILED))


def _listen(store: Any, settings: Any, run_id: str, how: Driving, put: Callable[[Any], None]) -> Any:
    """The workers' events of the run and of its child runs, into `put`; with --stream, the
    workers are asked to stream its answers (from the next model call on)."""
    from plait.worker.events import EventFollower, ask_to_stream, signing_key

    key = signing_key(store)

    def mine(event: Any) -> None:
        if event.run_id == run_id or (event.path and event.path[0][0] == run_id):
            put(event)

    follower = EventFollower(settings.broker, settings.queue, mine, key)
    follower.wait_ready()
    if how.stream:
        ask_to_stream(settings.broker, settings.queue, run_id, _nodes(how.stream), key)
    return follower


def streamed_id(store: Any, settings: Any, how: Driving) -> str | None:
    """With --stream: the id of the run about to be handed to the workers, told to them first
    (whichever takes it streams it from its first node); else None (the store gives the id)."""
    if not how.stream:
        return None
    from plait.worker.events import ask_to_stream, signing_key

    run_id = str(uuid.uuid4())
    ask_to_stream(settings.broker, settings.queue, run_id, _nodes(how.stream), signing_key(store))
    return run_id


def _nodes(stream: tuple[str, ...] | bool) -> bool | list[str]:
    return stream if isinstance(stream, bool) else list(stream)


def _view(run_id: str, how: Driving) -> Any:
    """The node table (LiveView), or the streamed answers with --stream; None with --quiet."""
    if how.quiet:
        return None
    if how.stream:
        from plait.cli.streamed import StreamView

        return StreamView()
    from plait.cli.live import LiveView

    return LiveView(None, run_id)


def _gathered(events: queue.SimpleQueue[Any], wait_s: float) -> Iterator[Any]:
    """The events that arrive within `wait_s`."""
    deadline = time.monotonic() + wait_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            yield events.get(timeout=left)
        except queue.Empty:
            return


class _Polled:
    """A run executed by a process that shares no events (another `plait run`, a server without
    workers): its nodes' changes read from the store, as the events they stand for."""

    def __init__(self, store: Any, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self._seen: dict[tuple[str, int], str] = {}

    def changes(self, wait_s: float) -> Iterator[Any]:
        from plait.engine.event_wire import WireEvent

        time.sleep(wait_s)
        for rec in self.store.runs.node_runs(self.run_id):
            status = str(rec.status)
            if self._seen.get((rec.node_id, rec.activation)) == status:
                continue
            self._seen[(rec.node_id, rec.activation)] = status
            kind = _POLLED.get(status)
            if kind is not None:
                yield WireEvent(kind, self.run_id, rec.node_id, {}, time.time())


_POLLED = {"running": "node:start", "completed": "node:complete", "overridden": "node:complete",
           "failed": "node:error", "skipped": "node:skipped"}  # fmt: skip
"""The event a node run's stored status stands for, when the store is all there is to watch."""


def untaken(settings: Any, run_id: str, waited_s: float,
            ctrl_c: str = "Ctrl-C stops following, the run stays queued") -> str:  # fmt: skip
    """The word for a run that no worker has taken yet: where it waits, how to start a worker,
    and what Ctrl-C does here."""
    from plait.redact import redact_url

    broker = redact_url(settings.broker)
    return (f"run {run_id} is waiting in queue '{settings.queue}' on {broker}: no worker has taken it in "
            f"{waited_s:.0f} s. Start one with: plait worker --queue {broker} (and the same --db); "
            f"{ctrl_c}\n")  # fmt: skip
