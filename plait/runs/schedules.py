"""Cron schedules: a graph run at the instants a cron expression names, in a time zone.

A schedule is stored (`plait.store.schedules`), so it survives restarts; a `Scheduler` (in
`plait serve`, in `plait worker --beat`) claims the due firings every few seconds and starts
their runs. Firings missed while no scheduler ran follow the schedule's `catch_up`:

- `none`: skipped; only a firing due within the last `ON_TIME_S` runs;
- `one` (the default): the missed firings are run once, as the latest of them;
- `all`: each missed firing is run (at most `MAX_CATCH_UP`; older ones are skipped).

A scheduled run's input is the schedule's, checked against the graph's current version when it
fires: an input the graph no longer accepts gives a failed run that says why, so the schedule's
history shows it.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from plait.engine.run_input import StartError, check_input
from plait.errors import PlaitError, Refusal
from plait.model.enums import RunStatus
from plait.runs.start import resolve_graph
from plait.store import RunExists, Store
from plait.store.schedules import ACTIVE, PAUSED, Firing, ScheduleRecord

CATCH_UP = ("none", "one", "all")
CRON_HINT = ("five fields: minute hour day-of-month month day-of-week, e.g. '*/5 * * * *' (every 5 minutes) or "
             "'0 9 * * 1-5' (9:00 on weekdays)")  # fmt: skip
ON_TIME_S = 60.0
"""A firing at most this late still counts as on time (a scheduler ticks every few seconds)."""
MAX_CATCH_UP = 100
SHORTHANDS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
"""Names croniter reads as five fields (`@daily` is `0 0 * * *`); `@reboot` names no instant."""
TICK_S = 2.0
ORPHAN_AFTER_S = 30.0
"""A firing claimed this long ago without its run: its scheduler died in between."""
log = logging.getLogger("plait.schedules")


class ScheduleError(PlaitError):
    """A schedule cannot be made as asked (its cron, time zone or catch-up)."""

    kind = Refusal.INVALID
    code = "schedule_invalid"


def next_after(cron: str, timezone: str, after: float) -> float:
    """The first instant after `after` (Unix seconds) that `cron` names in `timezone`."""
    from croniter import croniter

    start = datetime.fromtimestamp(after, _zone(timezone))
    try:
        return float(croniter(cron, start).get_next(float))
    except (ValueError, TypeError) as exc:  # croniter's errors: a bad expression, or no date that matches
        raise ScheduleError(f"'{cron}' cannot be scheduled: {exc}", CRON_HINT) from None


def check_cron(cron: str, timezone: str, now: float | None = None) -> None:
    """Refuse an expression that is not five cron fields (or a shorthand for five, such as
    `@daily`), or that names no instant at all."""
    from croniter import croniter

    _zone(timezone)
    fields = cron.split()
    if cron.strip() not in SHORTHANDS and (len(fields) != 5 or not croniter.is_valid(cron)):
        extra = " (a sixth field would be seconds, which schedules do not have)" if len(fields) == 6 else ""
        raise ScheduleError(f"'{cron}' is not a cron expression of five fields{extra}", CRON_HINT)
    try:
        next_after(cron, timezone, time.time() if now is None else now)
    except ScheduleError:
        raise ScheduleError(
            f"'{cron}' never fires: no date matches it (such as day 31 of February)",
            "check the day-of-month and month fields: " + CRON_HINT,
        ) from None


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"'{name}' is not a time zone", "an IANA name such as UTC or Europe/Paris") from None


def add_schedule(store: Store, ref: str, cron: str, run_input: dict[str, Any], *, catch_up: str = "one",
                 timezone: str = "UTC", files: bool = True, now: float | None = None) -> ScheduleRecord:  # fmt: skip
    """A new active schedule of the graph `ref` (a graph file is stored first when `files`)."""
    check_cron(cron, timezone, now)
    if catch_up not in CATCH_UP:
        raise ScheduleError(f"catch_up '{catch_up}' is not one of {', '.join(CATCH_UP)}")
    stored = resolve_graph(store, ref, files=files)
    check_input(stored, run_input)
    first = next_after(cron, timezone, time.time() if now is None else now)
    return store.schedules.create(graph_id=stored.graph_id, cron=cron, timezone=timezone, run_input=run_input,
                                  catch_up=catch_up, next_fire_at=first)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ScheduleShown:
    """A schedule with its newest firings: (instant, run id), the newest first."""

    schedule: ScheduleRecord
    firings: list[tuple[float, str]]

    def as_json(self) -> dict[str, Any]:
        return {**self.schedule.as_json(), "firings": [{"fire_at": at, "run_id": run} for at, run in self.firings]}


def show(store: Store, schedule_id: str) -> ScheduleShown:
    """The schedule `schedule_id` (or a unique prefix of one) and the runs it fired."""
    found = store.schedules.get(schedule_id)
    return ScheduleShown(found, store.schedules.firings(found.id))


def pause(store: Store, schedule_id: str) -> ScheduleRecord:
    return store.schedules.set_status(schedule_id, PAUSED)


def resume(store: Store, schedule_id: str, *, now: float | None = None) -> ScheduleRecord:
    """Active again; its next firing is the first from now on (nothing missed while paused)."""
    found = store.schedules.get(schedule_id)
    following = next_after(found.cron, found.timezone, time.time() if now is None else now)
    return store.schedules.set_status(found.id, ACTIVE, next_fire_at=following)


def plan(schedule: ScheduleRecord, now: float) -> tuple[list[float], float]:
    """The instants to fire now and the next firing after `now`, by the schedule's catch-up.

    Its cost does not grow with the time missed: the instants are found walking back from
    `now`, at most `MAX_CATCH_UP` of them (a per-minute cron missed for a year is 525,600
    instants; stepping through each held the scheduler for half a minute)."""
    wanted = MAX_CATCH_UP if schedule.catch_up == "all" else 1
    due = [schedule.next_fire_at, *reversed(_missed(schedule, now, wanted))][-wanted:]
    following = next_after(schedule.cron, schedule.timezone, now)
    if schedule.catch_up == "all":
        return due, following
    if schedule.catch_up == "one":
        return due[-1:], following
    return [t for t in due[-1:] if now - t <= ON_TIME_S], following


def _missed(schedule: ScheduleRecord, now: float, wanted: int) -> list[float]:
    """The cron's instants after the schedule's next firing and up to `now`, the newest first
    (at most `wanted`)."""
    from croniter import croniter

    walk = croniter(schedule.cron, datetime.fromtimestamp(now, _zone(schedule.timezone)))
    instant = float(walk.get_prev(float))  # strictly before `now`
    found: list[float] = []
    at_now = next_after(schedule.cron, schedule.timezone, instant)
    if at_now <= now:  # `now` is an instant itself
        found.append(at_now)
    while instant > schedule.next_fire_at and len(found) < wanted:
        found.append(instant)
        instant = float(walk.get_prev(float))
    return [t for t in found if t > schedule.next_fire_at]


class Scheduler:
    """Claims due firings and creates their runs; in `loop`, `started(run_id)` is called (on the
    loop's thread) for each new run: the server drives it, a worker queues it."""

    def __init__(
        self, store: Store, started: Callable[[str], object], *, owner: str | None = None, announce: str | None = None
    ):
        """`announce`: write each firing's run to the workers' outbox with it (`plait worker --beat`)."""
        self.store = store
        self.started = started
        self.announce = announce
        self.owner = owner or f"scheduler-{uuid.uuid4().hex[:8]}"

    def tick(self, now: float | None = None) -> list[str]:
        """One pass: the due firings claimed and their runs created (and a dead scheduler's
        firings given their runs); the ids of the runs created."""
        now = time.time() if now is None else now
        firings = self.store.schedules.claim_due(now, plan, self.owner)
        firings += self.store.schedules.orphans(now - ORPHAN_AFTER_S)
        return [f.run_id for f in firings if self._create(f)]

    def _create(self, firing: Firing) -> bool:
        """The firing's run, under the id the firing names; False when it exists already."""
        schedule = firing.schedule
        try:
            stored = self.store.graphs.get_default(schedule.graph_id)  # its promoted version, else its latest
        except PlaitError as exc:
            log.warning("schedule %s cannot fire: %s", schedule.id, exc)
            return False
        refusal: StartError | None = None
        try:
            check_input(stored, schedule.input)
        except StartError as exc:
            refusal = exc
        try:
            self.store.runs.add(graph_id=stored.graph_id, graph_version=stored.version,
                                schema_version=stored.schema_version, input=schedule.input,
                                run_id=firing.run_id, announce=self.announce if refusal is None else None)  # fmt: skip
        except RunExists:  # another scheduler created it (it took over the same orphan)
            return False
        if refusal is not None:
            error = {"kind": "schedule_input", "message": f"the schedule's input no longer fits: {refusal.message}",
                     "details": refusal.details}  # fmt: skip
            self.store.runs.set_status(firing.run_id, RunStatus.FAILED, error=error)
        self.store.schedules.ran(firing)
        return refusal is None

    async def loop(self, interval_s: float = TICK_S) -> None:
        """Tick until cancelled; a failing tick (a database hiccup) is logged and tried again."""
        while True:
            try:
                for run_id in await asyncio.to_thread(self.tick):
                    self.started(run_id)
            except Exception:  # the schedules must keep firing after one bad pass
                log.exception("a scheduler pass failed; trying again")
            await asyncio.sleep(interval_s)
