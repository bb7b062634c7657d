"""A server whose runs execute on workers (`plait serve --queue URL`, or `[workers] broker`):
it creates and corrects runs as always, and hands each run to the workers instead of driving it,
relaying its outbox; the workers' events come back over Redis into the server's event log, so
SSE and the workbench show nodes executed elsewhere.

The server then neither resumes left runs at start-up nor wakes due WAITs: the workers' reapers
do both, for every server and `plait run` of the deployment.
"""

from __future__ import annotations

import asyncio
import logging

from plait.api.events import EventLog
from plait.engine.events import Event
from plait.store import Store
from plait.worker.app import WorkerSettings, make_app
from plait.worker.events import EventFollower
from plait.worker.relay import Relay

log = logging.getLogger("plait.api")


class HandOff:
    """Hands runs to the workers and follows their events into `events`."""

    def __init__(self, store: Store, settings: WorkerSettings, events: EventLog, loop: asyncio.AbstractEventLoop):
        self.store, self.settings, self.events, self.loop = store, settings, events, loop
        self.relay = Relay(store, make_app(settings), settings)
        self.relay.start()
        self.follower = EventFollower(settings.broker, settings.queue, self._arrived)

    def __call__(self, run_id: str, *, announced: bool) -> None:
        """Hand `run_id` over: its message was written with it (`announced`), or is written now
        (a run resumed or corrected here); sent at once, off the loop."""
        if not announced:
            self.store.outbox.announce(run_id, "serve")
        self.loop.run_in_executor(None, self.relay.flush)

    def _arrived(self, event: Event) -> None:
        self.loop.call_soon_threadsafe(self.events.deliver, event)

    def close(self) -> None:
        self.follower.close()
        self.relay.stop()
