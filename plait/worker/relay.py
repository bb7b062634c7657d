"""The relay: sends the outbox to the broker, and (in workers) finds the runs nobody executes.

Every process that writes runs for workers relays its outbox right after the commit and then
every `RELAY_S`, so a message the broker refused (Redis restarting) is sent as soon as it is
back. Workers also reap: a run left `running` whose lease ran out (its worker was killed, its
machine lost), or left `pending`, is announced again, and so is a run whose WAIT is due. A
killed worker's run is thus taken over within its lease (`lease_ttl_s`) and a relay pass.
"""

from __future__ import annotations

import logging
import threading
import time

from celery import Celery

from plait.store import Store
from plait.worker.app import WorkerSettings, send

RELAY_S = 0.5
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
        return fresh

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
