"""The relay: sends the outbox to the broker, and (in workers) finds the runs nobody executes.

Every process that writes runs for workers relays its outbox right after the commit and then
every `RELAY_S`, so a message the broker refused (Redis restarting) is sent as soon as it is
back. Workers also reap: a run left `running` whose lease ran out (its worker was killed, its
machine lost) is announced again, and so is a run whose WAIT is due. A killed worker's run is
thus taken over within its lease (`lease_ttl_s`) and a relay pass.

A `pending` run is waiting in the broker's queue, however long the queue: announcing it again
would only make work. Its message is lost only with the broker's memory (a Redis restarted
without persistence, a flush). So a relay looks for a marker key on the broker every pass; the
first one to find it missing sets it and sweeps every pending run that was there before (one
page per pass), announcing each again. A pending run waiting longer than the visibility
timeout is swept too, for a message lost some other way.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from celery import Celery

from plait.store import Store
from plait.worker.app import WorkerSettings, send

RELAY_S = 0.5
SWEEP_PAGE = 100
"""Pending runs announced again per relay pass while a sweep lasts."""
MARKER = "plait:broker-alive:{queue}"
"""Set on the broker by the first relay after the broker started empty: its absence means the
broker lost what it held (or never held anything yet)."""
PRUNE_S = 600.0
"""How often a worker's relay removes the messages sent long ago (`OutboxRepository.prune`)."""
IDLE_S = 2.0
"""A run untouched this long with no live lease is abandoned (a fresh one is being begun)."""
log = logging.getLogger("plait.worker")


class Relay:
    """Sends the outbox of `store` through `app`; with `reap`, announces abandoned and due runs."""

    def __init__(self, store: Store, app: Celery, settings: WorkerSettings, *, reap: bool = False):
        self.store, self.app, self.settings, self.reap = store, app, settings, reap
        self._announced: dict[str, float] = {}
        """Runs this relay announced as abandoned, and when: not again within a lease."""
        self._sweep: tuple[float, tuple[float, str] | None] | None = None
        """A sweep of pending runs in progress: those last touched before this time, and the
        (updated_at, id) of the last one announced."""
        self._swept_long = time.time()
        """When pending runs waiting longer than the visibility timeout were last looked for."""
        self._broker = _marker_client(settings.broker) if reap else None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def nudge(self) -> None:
        """Make the next pass now (messages were just written), not at the end of `RELAY_S`."""
        self._wake.set()

    def flush(self) -> int:
        """Send what is unsent now; how many were sent (0 when the broker is away: kept)."""
        try:
            return self.store.outbox.relay(lambda run_id, reason: send(self.app, self.settings, run_id, reason))
        except Exception as exc:  # the broker or the database is away: the messages stay unsent
            log.warning("the outbox could not be sent: %s", exc)
            return 0

    def reap_once(self, now: float | None = None) -> list[str]:
        """Announce the runs nobody executes; their ids."""
        now = time.time() if now is None else now
        found = [r.id for r in self.store.runs.abandoned(now, IDLE_S)]
        found += [run_id for run_id, _ in self.store.runs.due(now)]
        fresh = [r for r in found if now - self._announced.get(r, 0.0) > self.settings.lease_ttl_s]
        for run_id in fresh:
            self.store.outbox.announce(run_id, "abandoned")
            self._announced[run_id] = now
        if len(self._announced) > 10_000:
            self._announced = {k: v for k, v in self._announced.items() if now - v <= self.settings.lease_ttl_s}
        lost = self._lost(now)
        for run_id in lost:
            self.store.outbox.announce(run_id, "lost")
        return fresh + lost

    def _lost(self, now: float) -> list[str]:
        """The next page of pending runs whose message the broker may have lost."""
        if self._broker_forgot():
            self._sweep = (now, None)
        elif self._sweep is None and now - self._swept_long >= self.settings.visibility_timeout_s:
            self._sweep = (now - self.settings.visibility_timeout_s, None)
            self._swept_long = now
        if self._sweep is None:
            return []
        before, after = self._sweep
        page = self.store.runs.pending_since(before, after, limit=SWEEP_PAGE)
        self._sweep = (before, (page[-1].updated_at, page[-1].id)) if len(page) == SWEEP_PAGE else None
        return [r.id for r in page]

    def _broker_forgot(self) -> bool:
        """Whether the broker lost its data since a relay last looked (this relay sets the marker)."""
        if self._broker is None:
            return False
        try:
            return bool(self._broker.set(MARKER.format(queue=self.settings.queue), "1", nx=True))
        except Exception:  # the broker is away: when it is back, the marker tells
            return False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="plait-relay", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        pruned = reaped = 0.0
        while not self._stop.is_set():
            self._wake.wait(RELAY_S)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                if self.reap and time.monotonic() - reaped >= RELAY_S:  # a nudge sends; it need not reap
                    self.reap_once()
                    reaped = time.monotonic()
                    if time.monotonic() - pruned > PRUNE_S:  # sent messages are not kept for ever
                        self.store.outbox.prune()
                        pruned = time.monotonic()
                self.flush()
            except Exception:  # a database hiccup: the next pass tries again
                log.exception("a relay pass failed")

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._broker is not None:
            self._broker.close()


def _marker_client(broker: str) -> Any:
    """A Redis client on the broker for the marker; None for another broker (RabbitMQ keeps its
    durable queues across restarts)."""
    if not broker.startswith(("redis://", "rediss://")):
        return None
    import redis

    return redis.Redis.from_url(broker, socket_timeout=2)
