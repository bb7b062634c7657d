"""Executing runs inside the server process: one background task per run being driven.

The engine does the work (`Engine.run`, the same call `plait run` and `plait resume` make);
this module decides *when*: a started run at once, a corrected run when the correction left
work, a paused run on resume, and at start-up every run a stopped or crashed process left
`running` or `pending` without a live lease (the engine's lease/claim design makes taking
those over safe: completed nodes are never executed again). A run executes on its own model
(the one it was started or last continued on, `plait.runs.model_choice`), which need not be
this server's: one engine per model (`plait.runs.engines`, shared with the workers).

A run whose engine stopped because the database failed (`plait.store.faults`: it retried its
writes for minutes, or could not even begin) is driven again a little later, until it ends: a
fault of the database never leaves a run wedged here.

Pause and cancel stop the run's task: the engine gives the run up (`RunRepository.give_up`),
so a node that was executing goes back to `pending` and runs again when the run is resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Sequence

from plait.api.events import EventLog
from plait.api.handoff import HandOff
from plait.api.history import history
from plait.config import McpServerConfig
from plait.engine.events import EventBus, RunFailed, RunResumed
from plait.engine.outcome import EngineError
from plait.engine.ports import RouteReader
from plait.engine.run_input import StartError
from plait.errors import Refusal
from plait.llm.provider import Provider
from plait.llm.select import LlmConfigError
from plait.model.enums import TERMINAL_RUN_STATUSES, RunStatus
from plait.runs.engines import RunEngines, refuse
from plait.runs.model_choice import Selection
from plait.runs.session import StreamChoice
from plait.runs.settings_in_force import SettingsInForce
from plait.store import RunRecord, Store, StoredGraph
from plait.store.faults import StoreUnavailable, transient

log = logging.getLogger("plait.api")

RECOVER_PAGE = 500
WAKE_POLL_S = 1.0
"""How often the server looks for runs whose WAIT is due: a parked run continues within this."""
SETTLE_POLL_S = 0.2
"""How often `settled` looks at a run workers execute."""
WAKE_RETRY_S = 60.0
"""How soon a due run the engine did not drive (it is still parked) is tried again."""
RELAUNCH_S = 2.0
RELAUNCH_MAX_S = 120.0
"""How soon a run whose engine stopped because the database failed is driven again: 2 s, then
twice as long each time it stops so again, at most 2 minutes."""


class ServiceStopping(Exception):
    """The server is shutting down and takes no new work."""


class RunExecutor:
    """Drives runs in the background of this server's process. A run is driven by at most one
    task here, and never while another live engine holds it; each run executes on the model it
    was started or last continued on. Stopping a run, or the server, leaves it resumable."""

    def __init__(
        self,
        store: Store,
        provider: Provider | None,
        *,
        bus: EventBus,
        events: EventLog,
        mcp_servers: Sequence[McpServerConfig] = (),
        cache: bool = True,
        lease_ttl_s: float = 30.0,
        llm: Selection = None,
        routes: RouteReader | None = None,
        settings: SettingsInForce | None = None,
    ) -> None:
        """`llm`: the model selection `provider` stands for (stored on the runs started here);
        `routes`: answers prompt scripts' `readRoute` in the runs executed here;
        `settings`: the settings the runs here follow (their revision is looked at as each run
        starts, `[resources]` read from them at each decision)."""
        self.settings = settings
        self.store = store
        self.bus = bus
        self.events = events
        self.llm = llm
        self.engines = RunEngines(
            store,
            provider,
            llm=llm,
            here="this server",
            events=bus,
            cache=cache,
            mcp_servers=mcp_servers,
            lease_ttl_s=lease_ttl_s,
            routes=routes,
            # no `graphs`: sub-runs name stored graphs only, a graph sent here must not make the server read its files
            before_run=settings.check if settings is not None else None,
            resources=settings.resources if settings is not None else None,
        )
        """This server's engine, and one per other model the runs driven here record."""
        self.engine = self.engines.default
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._relaunched: dict[str, int] = {}
        """Runs the database stopped, and how many times in a row (their next pause doubles)."""
        self._stopping = False
        self.handoff: HandOff | None = None
        """Set: runs are handed to workers (`plait.api.handoff`) instead of driven here."""

    # -- what routes ask -------------------------------------------------------------------------

    def preflight(self, stored: StoredGraph) -> None:
        """Refuse, before a run row exists, a graph this server cannot execute (a node type not
        executable yet, no provider for its model calls, an MCP server not configured), with
        the settings in force now."""
        if self.settings is not None:
            self.settings.check()
        try:
            self.engine.check_executable(stored)
        except EngineError as exc:
            raise StartError(
                f"this server cannot execute graph '{stored.slug}': {exc}",
                "configure the server (--llm, --config) or change the graph",
                kind=Refusal.INVALID,
            ) from None

    def driving(self, run_id: str) -> bool:
        """Whether this server is driving the run now."""
        return run_id in self._tasks

    @property
    def active(self) -> int:
        """How many runs this server is driving now."""
        return len(self._tasks)

    def launch(self, run_id: str, *, fresh: bool = False, stream: bool | list[str] = False) -> bool:
        """Drive the run in the background; False when this server drives it already.
        `fresh`: a run just created here (no history to seed its event log with); `stream`: the
        nodes whose answers its events pass on as they arrive (here: workers were told)."""
        if self._stopping:
            raise ServiceStopping("the server is shutting down")
        if run_id in self._tasks:
            return False
        if fresh:
            self.events.open(run_id)
        if self.handoff is not None:  # a stream choice was told to the workers with the run's creation
            self.handoff(run_id, announced=fresh)
            return True
        task = asyncio.create_task(self._drive(run_id, stream), name=f"plait-run-{run_id}")
        self._tasks[run_id] = task
        task.add_done_callback(lambda done: self._done(run_id, done))
        return True

    async def settled(self, run_id: str) -> None:
        """Wait until the run stops moving: this server's task for it ends or, handed to workers,
        the store says it ended or waits for a person (looked at every `SETTLE_POLL_S`)."""
        task = self._tasks.get(run_id)
        if task is not None:
            await asyncio.wait({task})
            return
        while self.handoff is not None:
            record = await asyncio.to_thread(self.store.runs.get, run_id)
            if record.status in TERMINAL_RUN_STATUSES or record.status == RunStatus.PAUSED:
                return
            await asyncio.sleep(SETTLE_POLL_S)

    async def stop(self, run_id: str) -> bool:
        """Stop driving a run (its lease is given up; it stays resumable). False: not driven here."""
        task = self._tasks.get(run_id)
        if task is None:
            return await self.handoff.stop(run_id) if self.handoff is not None else False
        task.cancel()
        await asyncio.wait({task})
        return True

    def held_elsewhere(self, record: RunRecord) -> bool:
        """Another live engine holds the run (it must be paused or cancelled there)."""
        if record.id in self._tasks or record.lease_owner is None or self.handoff is not None:
            return False  # with workers, a run they execute is stopped through them
        live = (record.lease_expires_at or 0.0) >= time.time()
        return live and record.status == RunStatus.RUNNING and not record.lease_owner.startswith("correction:")

    async def recover(self) -> list[str]:
        """Continue the runs left `running`/`pending` by a process that is gone (start-up)."""
        launched: list[str] = []
        for status in (RunStatus.RUNNING, RunStatus.PENDING):
            offset = 0
            while True:
                page = await asyncio.to_thread(self.store.runs.list, status=status, limit=RECOVER_PAGE, offset=offset)
                for record in page:
                    if self._abandoned(record) and self.launch(record.id):
                        launched.append(record.id)
                if len(page) < RECOVER_PAGE:
                    break
                offset += RECOVER_PAGE
        if launched:
            log.info("resuming %d runs left unfinished: %s", len(launched), ", ".join(launched))
        return launched

    async def wake_due(self) -> None:
        """Until the server stops: continue each run parked by WAIT nodes once it is due, whoever
        parked it (this server before a restart, a `plait run` that was stopped, another server)."""
        woken: dict[str, tuple[float, float]] = {}  # run id -> (the wake_at it was woken for, when)
        while not self._stopping:
            try:
                now = time.time()
                still: dict[str, tuple[float, float]] = {}  # only the runs due now are remembered
                for run_id, wake_at in await asyncio.to_thread(self.store.runs.due, now):
                    # A run the engine would not drive stays parked: try it again now and then,
                    # not every second (a new wake_at, parked again, is woken at once).
                    last = woken.get(run_id)
                    if last is not None and last[0] == wake_at and now - last[1] < WAKE_RETRY_S:
                        still[run_id] = last
                        continue
                    still[run_id] = (wake_at, now)
                    if self.launch(run_id):
                        self.events.emit(RunResumed(run_id, reason="due"))
                woken = still
            except ServiceStopping:
                return
            except Exception:  # a database hiccup must not end the waking for good
                log.exception("continuing the runs whose WAIT is due failed; trying again")
            await asyncio.sleep(WAKE_POLL_S)

    async def aclose(self) -> None:
        """Stop every run (they stay resumable: the next start or `plait resume` continues them)."""
        self._stopping = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        await self.engines.aclose()  # closes their providers too

    # -- driving ---------------------------------------------------------------------------------

    def _abandoned(self, record: RunRecord) -> bool:
        """No live lease, or one of a process on this machine (the engine takes it over when
        that process is dead, and refuses politely when it is alive)."""
        if record.lease_owner is None or (record.lease_expires_at or 0.0) < time.time():
            return True
        return record.lease_owner.split(":", 1)[0] == socket.gethostname()

    async def _drive(self, run_id: str, stream: bool | list[str] = False) -> None:
        try:
            if not self.events.has(run_id):
                self.events.open(run_id, await asyncio.to_thread(history, self.store, run_id))
            engine = await asyncio.to_thread(self.engines.for_run, run_id)
            if stream:
                engine.stream(run_id, StreamChoice.of(stream))
            await engine.run(run_id)
        except (EngineError, LlmConfigError) as exc:
            await self._refused(run_id, str(exc))
        except Exception as exc:
            if isinstance(exc, StoreUnavailable) or transient(exc):
                self._later(run_id, exc)
                return
            log.exception("run %s: the engine failed", run_id)
        self._relaunched.pop(run_id, None)

    def _later(self, run_id: str, exc: Exception) -> None:
        """The database stopped the run (it was left as it was): drive it again after a pause
        that doubles each time this happens in a row."""
        tries = self._relaunched.get(run_id, 0)
        self._relaunched[run_id] = tries + 1
        pause = min(RELAUNCH_MAX_S, RELAUNCH_S * 2**tries)
        log.warning("run %s stopped (%s); driving it again in %.0f s", run_id, exc, pause)
        asyncio.get_running_loop().call_later(pause, self._relaunch, run_id)

    def _relaunch(self, run_id: str) -> None:
        """Drive again a run the database stopped (unless the server is stopping, or drives it)."""
        with contextlib.suppress(ServiceStopping):
            self.launch(run_id)

    async def _refused(self, run_id: str, message: str) -> None:
        """The engine would not drive the run: a run that never started fails with the reason
        (else it would wait forever), one a correction reopened is paused with it (resumable on
        another model); one held by another process is left to it."""
        if await asyncio.to_thread(refuse, self.store, run_id, message) is not None:
            self.events.emit(RunFailed(run_id, error={"kind": "engine", "message": message}))
        log.warning("run %s not driven: %s", run_id, message)

    def _done(self, run_id: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(run_id) is task:
            del self._tasks[run_id]


def ended(record: RunRecord) -> bool:
    """Whether the run has reached a final status: nothing more will execute."""
    return record.status in TERMINAL_RUN_STATUSES
