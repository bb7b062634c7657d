"""A server whose runs execute on workers (`plait serve --queue URL`, or `[workers] broker`):
it creates and corrects runs as always, and hands each run to the workers instead of driving it,
relaying its outbox; the workers' events come back over Redis into the server's event log, so
SSE and the workbench show nodes executed elsewhere (signed: a message forged on Redis is dropped,
see plait/worker/events.py).

The server then neither resumes left runs at start-up nor wakes due WAITs: the workers' reapers
do both, for every server and `plait run` of the deployment. A pause or a cancel asked here of
a run a worker executes is sent to the workers (`stop`): that worker gives the run back, then
the server writes the run's new status.
"""

from __future__ import annotations

import asyncio
import logging
import time

from plait.api.events import EventLog
from plait.engine.event_wire import WireEvent
from plait.store import Store
from plait.worker.app import WorkerSettings, make_app
from plait.worker.events import EventFollower, ask_to_stop, ask_to_stream, signing_key
from plait.worker.relay import Relay

log = logging.getLogger("plait.api")


class HandOff:
    """Hands runs to the workers and follows their events into `events`."""

    def __init__(self, store: Store, settings: WorkerSettings, events: EventLog, loop: asyncio.AbstractEventLoop):
        self.store, self.settings, self.events, self.loop = store, settings, events, loop
        self.relay = Relay(store, make_app(settings), settings)
        self.relay.start()
        self.key = signing_key(store)
        self.follower = EventFollower(settings.broker, settings.queue, self._arrived, self.key)

    def __call__(self, run_id: str, *, announced: bool) -> None:
        """Hand `run_id` over: its message was written with it (`announced`), or is written now
        (a run resumed or corrected here); sent at once, off the loop."""
        if not announced:
            self.store.outbox.announce(run_id, "serve")
        self.loop.run_in_executor(None, self.relay.flush)

    def stream(self, run_id: str, nodes: bool | list[str]) -> None:
        """Ask the workers to stream `nodes` of `run_id`: told before the run exists, so that the
        one taking it knows (blocks on Redis: call it off the loop)."""
        ask_to_stream(self.settings.broker, self.settings.queue, run_id, nodes, self.key)

    async def stop(self, run_id: str) -> bool:
        """Ask the worker executing `run_id` to give it back (a pause or a cancel here), and wait
        until it has (its lease released or run out); False when no worker held it."""
        record = await asyncio.to_thread(self.store.runs.get, run_id)
        if record.lease_owner is None or (record.lease_expires_at or 0.0) < time.time():
            return False
        await asyncio.to_thread(ask_to_stop, self.settings.broker, self.settings.queue, run_id, self.key)
        deadline = time.monotonic() + self.settings.lease_ttl_s + 5
        while time.monotonic() < deadline:
            record = await asyncio.to_thread(self.store.runs.get, run_id)
            if record.lease_owner is None or (record.lease_expires_at or 0.0) < time.time():
                return True
            await asyncio.sleep(0.1)
        return True  # its lease ran out meanwhile, or will: the status written next stands

    def _arrived(self, event: WireEvent) -> None:
        self.loop.call_soon_threadsafe(self.events.deliver, event)

    def close(self) -> None:
        self.follower.close()
        self.relay.stop()
