"""One worker process's engines: an event loop on a thread of its own, where every run this
process executes on the same model shares one `Engine` (one provider pool, one store); Celery's
threads hand it runs and wait for them.

Without `--llm`, the worker's own model follows the settings (`plait.runs.settings_in_force`):
plait.toml with the changes made while the deployment runs over it, looked at as each run
starts and at most every second before a model call, so a change applies here without a restart.

A run executes on the model it records (`llm` of its record, the one it was started or last
continued on: `plait.runs.model_choice`), as on the server: a run on the worker's own model
(`--llm`/`--config`, else plait.toml, else the embedded model) or on none recorded goes to the
worker's engine, a run on another model to an engine built for it (`plait.runs.engines`). A
model this worker cannot build is a refusal that names it and why.

A run given to `execute` ends in one of these ways, which the task turns into what the broker
is told: it `ended` (completed, failed or paused: acknowledged), it is `busy` (another live
engine holds its lease: retried after a lease's length, when it has finished or its holder is
gone), it was `given_back` (this worker is shutting down: the engine released it, nodes in
flight back to pending, and it is announced again for another worker), or it was `refused`
(this worker cannot execute it: a never-started run is failed with the reason, as the server
does), or `stopped` (a server asked for it: the run is being paused or cancelled there, is
given up `paused`, and is not announced again). A message for a run this process is executing
already is a `duplicate` (the outbox sends at least once): acknowledged, as the run is in hand;
one for a run a person paused (`paused`) is acknowledged and does nothing, unless a server sent
it or the run's WAIT is due.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Literal

from plait.engine.events import EventBus, RunFailed
from plait.engine.outcome import EngineError
from plait.engine.spread import Spread
from plait.engine.streaming import FOLLOWED, StreamChoice
from plait.llm.provider import Provider
from plait.llm.select import LlmConfigError
from plait.model.enums import TERMINAL_RUN_STATUSES, RunStatus
from plait.runs.engines import RunEngines, refuse
from plait.runs.settings_in_force import SettingsInForce, following_provider
from plait.store import Store
from plait.worker.app import WorkerSettings
from plait.worker.events import CONTROL, EventFollower, EventPublisher, signing_key

Ending = Literal["ended", "busy", "given_back", "stopped", "refused", "duplicate", "paused"]
log = logging.getLogger("plait.worker")


class WorkerRuntime:
    """The store, the engines and their loop of one worker process."""

    def __init__(self, settings: WorkerSettings, concurrency: int = 8):
        from plait.config import configured_servers
        from plait.llm.select import provider_from_spec
        from plait.runs.model_choice import describe

        self.settings = settings
        self.store = Store(settings.db)
        self.loop = asyncio.new_event_loop()
        # every run's store calls and lease renewals go through the loop's threads: enough of them
        # that a lease is never renewed late because the other runs' writes hold every thread
        self.loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max(16, 3 * concurrency)))
        self._thread = threading.Thread(target=self.loop.run_forever, name="plait-worker-loop", daemon=True)
        self._thread.start()
        key = signing_key(self.store)
        self.publisher = EventPublisher(settings.broker, settings.queue, key)
        self.bus = bus = EventBus()
        bus.subscribe(self.publisher)
        # without --llm, the runs here follow the settings: plait.toml with the store's changes over it
        self.in_force = SettingsInForce(self.store, settings.config) if settings.llm is None else None
        """The settings this worker's runs follow (None: `--llm` chose one model)."""
        self._unfollow = self.in_force.follow() if self.in_force is not None else None
        if self.in_force is not None:
            provider: Provider | None = following_provider(self.in_force)
        else:
            provider = provider_from_spec(settings.llm, settings.config)
        own = describe(settings.llm, settings.config)  # the runs recorded on it go to the worker's engine
        servers = configured_servers(settings.config)

        self.nudge: Callable[[], None] = lambda: None
        """Called when the engine announced MAP items: the process's relay sends them at once."""
        spread = Spread(lambda: self.nudge(), settings.spread_grace_s) if settings.spread_map else None

        in_force = self.in_force

        async def build() -> RunEngines:
            return RunEngines(self.store, provider, llm=own, here="this worker", events=bus,
                              lease_ttl_s=settings.lease_ttl_s, mcp_servers=servers, spread=spread,
                              before_run=in_force.check if in_force is not None else None,
                              resources=in_force.resources if in_force is not None else None)  # fmt: skip

        self.engines = asyncio.run_coroutine_threadsafe(build(), self.loop).result()
        """The worker's engine, and one per other model the runs executed here record."""
        self._running: dict[str, concurrent.futures.Future[Ending]] = {}
        self._lock = threading.Lock()
        self.stopping = False
        self._asked: set[str] = set()
        """Runs given back because a pause or a cancel was asked elsewhere: not announced again."""
        self._streams: dict[str, StreamChoice] = {}
        """Runs a server asked to stream, until one starts here (at most `FOLLOWED`)."""
        self.control = EventFollower(settings.broker, settings.queue, self._control, key, channel=CONTROL, raw=True)

    def execute(self, run_id: str, reason: str = "start") -> Ending:
        """Execute (or continue) the run here until it ends, or this worker gives it back.
        `reason`: why its message was sent; a run a person paused is continued only when a
        server sent it (a resume, an answered review) or its WAIT is due, never by a message
        left from before the pause."""
        if reason != "serve" and self._left_paused(run_id):
            return "paused"
        with self._lock:
            if self.stopping:
                return "given_back"
            if run_id in self._running:  # a second message for a run this process executes: one driver
                return "duplicate"
            future = asyncio.run_coroutine_threadsafe(self._drive(run_id), self.loop)
            self._running[run_id] = future
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            with self._lock:
                asked = run_id in self._asked
                self._asked.discard(run_id)
            return "stopped" if asked else "given_back"
        finally:
            with self._lock:
                self._running.pop(run_id, None)

    def _left_paused(self, run_id: str) -> bool:
        record = self.store.runs.get(run_id)
        due = record.wake_at is not None and record.wake_at <= time.time()
        return record.status == RunStatus.PAUSED and not due

    def _control(self, text: str) -> None:
        """A request from a server: stop a run this process executes (it is paused or cancelled
        there), or stream some of a run's answers."""
        try:
            message = json.loads(text)
            if "stream" in message:
                self._follow(str(message["stream"]), StreamChoice.of(message["nodes"]))
                return
            run_id = str(message["stop"])
        except (ValueError, KeyError, TypeError):
            return
        with self._lock:
            future = self._running.get(run_id)
            if future is None:
                return
            self._asked.add(run_id)
        for engine in self.engines.all:  # given up paused: a message still queued for it must not restart it
            self.loop.call_soon_threadsafe(engine.stopping.add, run_id)
        future.cancel()  # after those: the loop runs callbacks in order

    def _follow(self, run_id: str, choice: StreamChoice | None) -> None:
        """Stream `choice`'s nodes of the run when it executes here: every worker is told, as
        any of them may take it (or has: its nodes started from now on stream)."""
        if choice is None:
            return
        with self._lock:
            self._streams[run_id] = choice
            while len(self._streams) > FOLLOWED:
                del self._streams[next(iter(self._streams))]
        for engine in self.engines.all:
            self.loop.call_soon_threadsafe(engine.stream, run_id, choice)

    async def _drive(self, run_id: str) -> Ending:
        try:
            engine = await asyncio.to_thread(self.engines.for_run, run_id)  # the run's own model
            with self._lock:
                choice = self._streams.pop(run_id, None)
            if choice is not None:
                engine.stream(run_id, choice)
            # a worker executes at most its concurrency of runs and the rest wait in the broker's
            # queue: a run finding the providers busy waits for its slot in the pool's queue,
            # not at the resource gate, holding a place (see plait/engine/resources.py)
            await engine.run(run_id, bounded=True)
        except (EngineError, LlmConfigError) as exc:
            record = await asyncio.to_thread(self.store.runs.get, run_id)
            live = record.lease_owner is not None and (record.lease_expires_at or 0.0) >= time.time()
            if live and record.status == RunStatus.RUNNING:
                return "busy"
            if record.status in TERMINAL_RUN_STATUSES:
                return "ended"  # a late message for a run that ended: nothing to execute, nothing to refuse
            if await asyncio.to_thread(refuse, self.store, run_id, str(exc)) is not None:
                self.bus.emit(RunFailed(run_id, error={"kind": "engine", "message": str(exc)}))
            log.warning("run %s refused: %s", run_id, exc)
            return "refused"
        return "ended"

    def give_back(self, timeout_s: float = 30.0) -> None:
        """Stop every run in flight here (their nodes go back to pending, their leases are
        released) and take no more; waits for the engine to have given them up."""
        with self._lock:
            self.stopping = True
            futures = list(self._running.values())
        for future in futures:
            future.cancel()
        concurrent.futures.wait(futures, timeout=timeout_s)

    def close(self) -> None:
        self.control.close()
        asyncio.run_coroutine_threadsafe(self.engines.aclose(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.publisher.close()
        if self._unfollow is not None:
            self._unfollow()
        self.store.close()
