"""Cron schedules (`schedule`) and their firings (`schedule_firing`).

A firing is claimed once, whichever scheduler claims it and however many race: the transaction
that moves a schedule's `next_fire_at` on does so only from the value it was planned from (a
second scheduler's update then changes nothing: PostgreSQL makes it wait for the first and
checks again; SQLite has one writer at a time), and each firing is a row keyed by (schedule,
instant), inserted in that same transaction. The firing names the id its run will have, so
creating the run afterwards is idempotent: a scheduler that died in between leaves a firing
whose run the next one creates, under that same id, never a second run.
"""

from __future__ import annotations

import builtins
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, and_, insert, select, update

from plait.store.db import conflict_insert, writer
from plait.store.errors import NotFoundError
from plait.store.models import GRAPH_RUN, SCHEDULE, SCHEDULE_FIRING

ACTIVE, PAUSED = "active", "paused"
CLAIM_PAGE = 50
log = logging.getLogger("plait.schedules")


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    """One schedule as stored."""

    id: str
    graph_id: str
    cron: str
    timezone: str
    input: dict[str, Any]
    catch_up: str
    status: str
    next_fire_at: float
    last_fired_at: float | None
    last_run_id: str | None
    created_at: float
    updated_at: float
    deleted_at: float | None

    def as_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class Firing:
    """One claimed firing: the schedule, its instant, and the id its run has (or will have)."""

    schedule: ScheduleRecord
    fire_at: float
    run_id: str


Plan = Callable[[ScheduleRecord, float], tuple[list[float], float]]
"""(a due schedule, now) -> (the instants to fire now, the next firing after them)."""


class ScheduleRepository:
    """Creates, lists, pauses, resumes and (softly) deletes schedules; claims their firings."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)
        self._insert = conflict_insert(engine)

    def create(self, *, graph_id: str, cron: str, timezone: str, run_input: dict[str, Any], catch_up: str,
               next_fire_at: float) -> ScheduleRecord:  # fmt: skip
        now = time.time()
        record = ScheduleRecord(str(uuid.uuid4()), graph_id, cron, timezone, run_input, catch_up, ACTIVE,
                                next_fire_at, None, None, now, now, None)  # fmt: skip
        with self._writer.begin() as conn:
            conn.execute(insert(SCHEDULE).values(_row(record)))
        return record

    def get(self, schedule_id: str) -> ScheduleRecord:
        """A live schedule by id, or a unique prefix of one; NotFoundError otherwise."""
        query = select(SCHEDULE).where(SCHEDULE.c.id.startswith(schedule_id), SCHEDULE.c.deleted_at.is_(None))
        with self._engine.connect() as conn:
            rows = conn.execute(query.limit(2)).all()
        if len(rows) != 1:
            state = "matches several schedules" if rows else "is not a schedule"
            raise NotFoundError(f"'{schedule_id}' {state}; `plait schedules list` shows them")
        return _record(rows[0])

    def list(self) -> list[ScheduleRecord]:
        query = select(SCHEDULE).where(SCHEDULE.c.deleted_at.is_(None)).order_by(SCHEDULE.c.created_at)
        with self._engine.connect() as conn:
            return [_record(row) for row in conn.execute(query)]

    def set_status(self, schedule_id: str, status: str, *, next_fire_at: float | None = None) -> ScheduleRecord:
        """Pause or resume; a resumed schedule's next firing is `next_fire_at` (from now on)."""
        found = self.get(schedule_id)
        values: dict[str, Any] = {"status": status, "updated_at": time.time()}
        if next_fire_at is not None:
            values["next_fire_at"] = next_fire_at
        with self._writer.begin() as conn:
            conn.execute(update(SCHEDULE).where(SCHEDULE.c.id == found.id).values(**values))
        return self.get(found.id)

    def delete(self, schedule_id: str) -> ScheduleRecord:
        found = self.get(schedule_id)
        with self._writer.begin() as conn:
            conn.execute(update(SCHEDULE).where(SCHEDULE.c.id == found.id).values(deleted_at=time.time()))
        return found

    def claim_due(self, now: float, plan: Plan, owner: str) -> builtins.list[Firing]:
        """Claim the firings due at `now` of every active schedule, each exactly once across
        schedulers; the caller creates their runs (`orphans` finds the ones it did not).

        The due schedules are read and planned outside any transaction (planning evaluates the
        cron), then each is claimed in a short transaction of its own: on SQLite no write waits
        behind a scheduler's planning. The claim moves the schedule on only from the
        `next_fire_at` it was planned from: a scheduler that planned it too finds it moved and
        claims nothing. A schedule whose cron cannot be planned (one stored before it was
        refused) is paused, with a warning: the others still fire."""
        query = (
            select(SCHEDULE)
            .where(SCHEDULE.c.status == ACTIVE, SCHEDULE.c.deleted_at.is_(None), SCHEDULE.c.next_fire_at <= now)
            .order_by(SCHEDULE.c.next_fire_at)
            .limit(CLAIM_PAGE)
        )
        with self._engine.connect() as conn:
            due = [_record(row) for row in conn.execute(query).all()]
        claimed: builtins.list[Firing] = []
        for schedule in due:
            try:
                instants, following = plan(schedule, now)
            except Exception as exc:  # its cron cannot be evaluated: it would fail every pass
                log.warning("schedule %s paused: its cron '%s' cannot be planned (%s)", schedule.id, schedule.cron, exc)
                self.set_status(schedule.id, PAUSED)
                continue
            with self._writer.begin() as conn:
                claimed += self._claim(conn, schedule, instants, following, now, owner)
        return claimed

    def _claim(self, conn: Any, schedule: ScheduleRecord, instants: builtins.list[float], following: float, now: float,
               owner: str) -> builtins.list[Firing]:  # fmt: skip
        """Move one due schedule on and record its firings (none when another scheduler moved
        it first, or fired an instant already)."""
        last = instants[-1] if instants else schedule.last_fired_at
        moved = conn.execute(
            update(SCHEDULE)
            .where(SCHEDULE.c.id == schedule.id, SCHEDULE.c.next_fire_at == schedule.next_fire_at)
            .values(next_fire_at=following, last_fired_at=last, updated_at=now)
        )
        if moved.rowcount != 1:
            return []
        claimed: builtins.list[Firing] = []
        for instant in instants:
            firing = Firing(schedule, instant, str(uuid.uuid4()))
            row = {"schedule_id": schedule.id, "fire_at": instant, "run_id": firing.run_id, "claimed_at": now,
                   "claimed_by": owner}  # fmt: skip
            added = self._insert(SCHEDULE_FIRING).values(row).on_conflict_do_nothing()
            if conn.execute(added.returning(SCHEDULE_FIRING.c.fire_at)).first() is not None:  # None: fired already
                claimed.append(firing)
        return claimed

    def ran(self, firing: Firing) -> None:
        """The firing's run exists: remember it as the schedule's last."""
        with self._writer.begin() as conn:
            conn.execute(update(SCHEDULE).where(SCHEDULE.c.id == firing.schedule.id).values(last_run_id=firing.run_id))

    def orphans(self, older_than: float) -> builtins.list[Firing]:
        """Firings claimed before `older_than` whose run was never created (their scheduler
        died in between)."""
        query = (
            select(SCHEDULE_FIRING.c.fire_at, SCHEDULE_FIRING.c.run_id, SCHEDULE)
            .join(SCHEDULE, SCHEDULE.c.id == SCHEDULE_FIRING.c.schedule_id)
            .outerjoin(GRAPH_RUN, GRAPH_RUN.c.id == SCHEDULE_FIRING.c.run_id)
            .where(and_(GRAPH_RUN.c.id.is_(None), SCHEDULE_FIRING.c.claimed_at < older_than))
            .limit(CLAIM_PAGE)
        )
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return [Firing(_record(row), float(row.fire_at), str(row.run_id)) for row in rows]

    def firings(self, schedule_id: str, limit: int = 50) -> builtins.list[tuple[float, str]]:
        """(instant, run id) of the schedule's newest firings whose run exists (a firing is
        claimed a moment before its run is created: it is listed once there is a run to open)."""
        query = (
            select(SCHEDULE_FIRING.c.fire_at, SCHEDULE_FIRING.c.run_id)
            .join(GRAPH_RUN, GRAPH_RUN.c.id == SCHEDULE_FIRING.c.run_id)
            .where(SCHEDULE_FIRING.c.schedule_id == schedule_id)
            .order_by(SCHEDULE_FIRING.c.fire_at.desc())
            .limit(limit)
        )
        with self._engine.connect() as conn:
            return [(float(at), str(run_id)) for at, run_id in conn.execute(query)]


def _row(record: ScheduleRecord) -> dict[str, Any]:
    row = {name: getattr(record, name) for name in ScheduleRecord.__slots__ if name != "input"}
    row["input_json"] = record.input
    return row


def _record(row: Any) -> ScheduleRecord:
    data = row._mapping
    return ScheduleRecord(
        id=data["id"], graph_id=data["graph_id"], cron=data["cron"], timezone=data["timezone"],
        input=data["input_json"] or {}, catch_up=data["catch_up"], status=data["status"],
        next_fire_at=float(data["next_fire_at"]), last_fired_at=data["last_fired_at"],
        last_run_id=data["last_run_id"], created_at=data["created_at"], updated_at=data["updated_at"],
        deleted_at=data["deleted_at"],
    )  # fmt: skip
