"""Cron schedules on both stores: missed firings follow catch_up none | one | all; a due schedule
fires once per instant even with two schedulers racing (each with its own store, as two
processes); a scheduler that died between claiming a firing and creating its run leaves a
firing the next one gives its run, once; a paused schedule does not fire and resumes from now;
an input the graph no longer accepts gives a failed run saying why."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from plait.model.enums import RunStatus
from plait.runs.schedules import (
    MAX_CATCH_UP,
    ORPHAN_AFTER_S,
    ScheduleError,
    Scheduler,
    add_schedule,
    pause,
    plan,
    resume,
)
from plait.store import Store
from plait.store.schedules import ScheduleRecord
from tests.engine.test_engine import graph_file

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC).timestamp()  # a Wednesday, 09:00 UTC
MINUTE = 60.0


def graph(tmp_path: Path) -> str:
    return graph_file(
        tmp_path,
        [{"id": "echo", "type": "TRANSFORM", "transform_expr": "({text: input.text})"}],
        [{"source": "echo", "target": "END", "schema_id": "text"}],
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )


def every_five_minutes(catch_up: str, next_fire_at: float) -> ScheduleRecord:
    return ScheduleRecord("s", "g", "*/5 * * * *", "UTC", {}, catch_up, "active", next_fire_at, None, None, 0, 0, None)


@pytest.mark.parametrize(
    ("catch_up", "fired"),
    [("all", [T0, T0 + 300, T0 + 600, T0 + 900]), ("one", [T0 + 900]), ("none", [])],
)
def test_firings_missed_while_no_scheduler_ran_follow_catch_up(catch_up: str, fired: list[float]) -> None:
    now = T0 + 15 * MINUTE + 90  # four firings missed, the newest 90 s ago
    instants, following = plan(every_five_minutes(catch_up, T0), now)
    assert instants == fired
    assert following == T0 + 20 * MINUTE


def test_a_firing_due_just_now_fires_even_without_catch_up() -> None:
    assert plan(every_five_minutes("none", T0), T0 + 5) == ([T0], T0 + 5 * MINUTE)


def test_a_weekday_cron_in_a_time_zone_names_the_right_instant(store: Store, tmp_path: Path) -> None:
    made = add_schedule(store, graph(tmp_path), "0 9 * * 1-5", {"text": "hi"}, timezone="Europe/Paris", now=T0)
    assert made.next_fire_at == datetime(2026, 12, 3, 8, 0, tzinfo=UTC).timestamp()  # 9:00 in Paris, next day
    with pytest.raises(ScheduleError, match="not a cron expression"):
        add_schedule(store, graph(tmp_path), "61 * * *", {"text": "hi"})
    with pytest.raises(ScheduleError, match="not a time zone"):
        add_schedule(store, graph(tmp_path), "* * * * *", {"text": "hi"}, timezone="Mars/Olympus")


def test_a_due_schedule_fires_once_with_its_input_and_moves_on(store: Store, tmp_path: Path) -> None:
    made = add_schedule(store, graph(tmp_path), "*/5 * * * *", {"text": "tick"}, now=T0)
    started: list[str] = []
    scheduler = Scheduler(store, started.append)
    assert scheduler.tick(T0 + 60) == []  # not due yet
    created = scheduler.tick(T0 + 5 * MINUTE + 1)
    assert len(created) == 1
    assert store.runs.get(created[0]).input == {"text": "tick"}
    assert scheduler.tick(T0 + 5 * MINUTE + 2) == []  # that instant fired already
    after = store.schedules.get(made.id)
    assert after.next_fire_at == T0 + 10 * MINUTE
    assert after.last_run_id == created[0]
    assert store.schedules.firings(made.id) == [(T0 + 5 * MINUTE, created[0])]


def test_a_paused_schedule_does_not_fire_and_resumes_from_now(store: Store, tmp_path: Path) -> None:
    made = add_schedule(store, graph(tmp_path), "* * * * *", {"text": "x"}, now=T0)
    pause(store, made.id)
    scheduler = Scheduler(store, lambda run_id: None)
    assert scheduler.tick(T0 + 10 * MINUTE) == []
    resumed = resume(store, made.id, now=T0 + 10 * MINUTE + 1)
    assert resumed.next_fire_at == T0 + 11 * MINUTE  # nothing missed while paused is caught up
    assert len(scheduler.tick(T0 + 11 * MINUTE)) == 1


def test_two_schedulers_racing_fire_each_instant_once(
    store: Store, open_store: Callable[[], Store], tmp_path: Path
) -> None:
    ref = graph(tmp_path)
    schedules = [add_schedule(store, ref, "* * * * *", {"text": str(i)}, catch_up="all", now=T0) for i in range(8)]
    stores = [open_store(), open_store()]
    barrier = threading.Barrier(2)
    created: list[list[str]] = [[], []]

    def race(which: int) -> None:
        scheduler = Scheduler(stores[which], lambda run_id: None, owner=f"s{which}")
        for minute in range(1, 6):
            barrier.wait()
            created[which] += scheduler.tick(T0 + minute * MINUTE + 1)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    every = created[0] + created[1]
    assert len(every) == len(set(every)) == 8 * 5  # minutes 1..5 for each schedule, once each
    per_schedule = Counter(store.runs.get(run_id).input["text"] for run_id in every)
    assert set(per_schedule.values()) == {5}
    for schedule in schedules:
        instants = [at for at, _ in store.schedules.firings(schedule.id)]
        assert sorted(instants) == [T0 + m * MINUTE for m in range(1, 6)]


def test_a_firing_whose_scheduler_died_gets_its_run_once(
    store: Store, open_store: Callable[[], Store], tmp_path: Path
) -> None:
    made = add_schedule(store, graph(tmp_path), "* * * * *", {"text": "x"}, now=T0)
    now = time.time()
    store.schedules.set_status(made.id, "active", next_fire_at=now - 5)
    (firing,) = store.schedules.claim_due(now, plan, "dead")  # claimed, then the process died
    assert not store.runs.exists(firing.run_id)
    late = now + ORPHAN_AFTER_S + 1
    first = Scheduler(open_store(), lambda run_id: None).tick(late)
    second = Scheduler(open_store(), lambda run_id: None).tick(late)
    assert firing.run_id in first + second
    assert (first + second).count(firing.run_id) == 1
    assert store.runs.get(firing.run_id).input == {"text": "x"}


def test_an_input_the_graph_no_longer_accepts_gives_a_failed_run_saying_why(store: Store, tmp_path: Path) -> None:
    made = add_schedule(store, graph(tmp_path), "* * * * *", {"text": "x"}, now=T0)
    changed = graph_file(
        tmp_path,
        [{"id": "echo", "type": "TRANSFORM", "transform_expr": "({text: input.title})"}],
        [{"source": "echo", "target": "END", "schema_id": "text"}],
        input_schema={"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
    )
    from plait.runs.start import resolve_graph

    resolve_graph(store, changed)  # the same graph id "g", a new version
    Scheduler(store, lambda run_id: None).tick(T0 + MINUTE)
    (fired,) = store.schedules.firings(made.id)
    run = store.runs.get(fired[1])
    assert run.status == RunStatus.FAILED
    assert run.error is not None
    assert "no longer fits" in run.error["message"]


def test_catching_up_a_year_of_a_per_minute_cron_costs_what_a_minute_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planning walks back from now, at most MAX_CATCH_UP instants, whatever the downtime (it
    used to step through every missed instant: 525,600 for a year, about 38 s)."""
    from croniter import croniter

    steps = Counter[str]()
    for name in ("get_next", "get_prev"):
        original = getattr(croniter, name)

        def counted(self: croniter, *args: object, _original: Callable[..., object] = original, _name: str = name,
                    **kwargs: object) -> object:  # fmt: skip
            steps[_name] += 1
            if sum(steps.values()) > 10 * MAX_CATCH_UP:
                raise AssertionError("planning steps through every missed instant")
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(croniter, name, counted)
    now = T0 + 365 * 24 * 3600 + 30  # a year later, 30 s past a minute
    for catch_up, fired in [("all", [now - 30 - 60 * i for i in range(MAX_CATCH_UP)][::-1]), ("one", [now - 30]),
                            ("none", [now - 30])]:  # fmt: skip
        schedule = ScheduleRecord("s", "g", "* * * * *", "UTC", {}, catch_up, "active", T0, None, None, 0, 0, None)
        assert plan(schedule, now) == (fired, now - 30 + MINUTE)
    assert sum(steps.values()) <= 3 * (MAX_CATCH_UP + 5)


def test_a_scheduler_plans_without_holding_the_write_lock(tmp_path: Path) -> None:
    """On SQLite, a write that arrives while the scheduler plans (a run's node, a new run) does not
    wait for it: planning happens outside the transaction that claims the firings."""
    import sqlite3

    path = tmp_path / "plait.db"
    with Store(f"sqlite:///{path}") as store:
        made = add_schedule(store, graph(tmp_path), "* * * * *", {"text": "x"}, catch_up="all", now=T0)
        other = sqlite3.connect(path, timeout=0, isolation_level=None)  # another writer, which does not wait
        writes: list[str] = []

        def plan_and_write(schedule: ScheduleRecord, now: float) -> tuple[list[float], float]:
            other.execute("BEGIN IMMEDIATE")  # "database is locked" when the scheduler holds the lock
            other.execute("COMMIT")
            writes.append(schedule.id)
            return plan(schedule, now)

        firings = store.schedules.claim_due(T0 + 3 * 24 * 3600, plan_and_write, "me")
        other.close()
    assert writes == [made.id]
    assert len(firings) == MAX_CATCH_UP


@pytest.mark.parametrize(
    ("cron", "says"),
    [("0 0 31 2 *", "never fires: no date matches it"), ("0 0 30 2 *", "never fires"),
     ("* * * * * *", "a sixth field would be seconds"), ("@reboot", "not a cron expression of five fields")],
)  # fmt: skip
def test_a_cron_that_never_fires_or_is_not_five_fields_is_refused(
    store: Store, tmp_path: Path, cron: str, says: str
) -> None:
    with pytest.raises(ScheduleError, match=says) as refused:
        add_schedule(store, graph(tmp_path), cron, {"text": "x"}, now=T0)
    assert "five fields: minute hour day-of-month month day-of-week" in (refused.value.hint or "")
    assert store.schedules.list() == []


def test_a_shorthand_for_five_fields_is_a_cron(store: Store, tmp_path: Path) -> None:
    """`@daily` is `0 0 * * *` to croniter: it fires at the next midnight."""
    made = add_schedule(store, graph(tmp_path), "@daily", {"text": "x"}, now=T0)
    assert made.cron == "@daily"
    assert made.next_fire_at == datetime(2026, 12, 3, 0, 0, tzinfo=UTC).timestamp()


def test_a_stored_schedule_whose_cron_cannot_be_planned_is_paused_and_the_others_fire(
    store: Store, tmp_path: Path
) -> None:
    """A schedule stored before its cron was refused (a cron that never fires) must not stop the
    scheduler: it is paused, with a warning, and the others fire."""
    ref = graph(tmp_path)
    good = add_schedule(store, ref, "* * * * *", {"text": "good"}, now=T0)
    bad = add_schedule(store, ref, "* * * * *", {"text": "bad"}, now=T0 - 1)
    from sqlalchemy import update

    from plait.store.models import SCHEDULE

    with store.db.begin() as conn:  # as an older release stored it
        conn.execute(update(SCHEDULE).where(SCHEDULE.c.id == bad.id).values(cron="0 0 31 2 *"))
    created = Scheduler(store, lambda run_id: None).tick(T0 + MINUTE + 1)
    assert [store.runs.get(run_id).input for run_id in created] == [{"text": "good"}]
    assert store.schedules.get(bad.id).status == "paused"
    assert store.schedules.get(good.id).status == "active"
