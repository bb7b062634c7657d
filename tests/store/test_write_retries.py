"""The engine's writes retried on a fault of the database: SQLite's write lock held by another
process past the busy timeout (what a long catch-up of schedules did) makes a node's commit fail;
the answer that arrived is kept and written once the lock is free, the model is not asked again,
and the run completes. A database away longer than the retry window stops the run without
failing it, and the run is continued later."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from plait.engine import commits
from plait.engine.runner import Engine
from plait.llm.select import provider_from_spec
from plait.model.enums import NodeStatus, RunStatus
from plait.runs.start import start_run
from plait.store import Store, db
from plait.store.faults import StoreUnavailable
from tests.worker.counting_server import PAID_THEN_SHAPED, Counts, counting_server


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Store, Engine, Counts, threading.Event]]:
    # a short busy timeout: a write waits 0.1 s for the lock, not 5 s, before it fails
    pragmas = tuple("PRAGMA busy_timeout=100" if p.startswith("PRAGMA busy_timeout") else p for p in db.SQLITE_PRAGMAS)
    monkeypatch.setattr(db, "SQLITE_PRAGMAS", pragmas)
    gate = threading.Event()
    with counting_server(latency_s=0.0, gate=gate) as (url, counts):
        config = tmp_path / "plait.toml"
        config.write_text(f'[[providers]]\nid = "fake"\nkind = "openai"\nbase_url = "{url}"\n'
                          'models = [{name = "m"}]\n[roles]\nchat = "fake/m"\n')  # fmt: skip
        (tmp_path / "graph.yaml").write_text(yaml.safe_dump(PAID_THEN_SHAPED))
        store = Store(f"sqlite:///{tmp_path / 'plait.db'}")
        engine = Engine(store, provider_from_spec(None, str(config)))
        try:
            yield store, engine, counts, gate
        finally:
            gate.set()
            store.close()


async def _until(condition: object, what: str, timeout: float = 60.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.02)


def _lock(store: Store) -> sqlite3.Connection:
    """Another process's writer holding the database's write lock."""
    locker = sqlite3.connect(store.db.url.database or "", isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    return locker


def test_a_node_commit_failed_by_a_held_lock_is_retried_and_the_answer_kept(
    setup: tuple[Store, Engine, Counts, threading.Event], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, engine, counts, gate = setup
    run_id = start_run(store, str(tmp_path / "graph.yaml"), {})
    caplog.set_level(logging.WARNING, logger="plait.engine")

    async def scenario() -> RunStatus:
        running = asyncio.create_task(engine.run(run_id))
        await _until(lambda: counts.arrivals, "the model call")
        locker = _lock(store)
        gate.set()  # the answer arrives while another writer holds the lock
        await _until(lambda: "the database failed a commit" in caplog.text, "the commit to fail")
        locker.execute("COMMIT")
        outcome = await running
        await engine.aclose()
        return outcome.status

    assert asyncio.run(scenario()) == RunStatus.COMPLETED
    assert len(counts.arrivals) == 1  # the paid answer was kept, not asked again
    assert store.runs.get(run_id).output == {"said": "ok"}
    [a] = [n for n in store.runs.node_runs(run_id) if n.node_id == "a"]
    assert (a.status, a.claims) == (NodeStatus.COMPLETED, 1)


def test_a_database_away_past_the_retry_window_stops_the_run_unfailed_and_it_continues_later(
    setup: tuple[Store, Engine, Counts, threading.Event], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, engine, counts, gate = setup
    monkeypatch.setattr(commits, "RETRY_S", 0.3)
    run_id = start_run(store, str(tmp_path / "graph.yaml"), {})

    async def scenario() -> RunStatus:
        running = asyncio.create_task(engine.run(run_id))
        await _until(lambda: counts.arrivals, "the model call")
        locker = _lock(store)
        gate.set()
        with pytest.raises(StoreUnavailable, match="did not take the engine's writes"):
            await running
        locker.execute("ROLLBACK")
        assert store.runs.get(run_id).status == RunStatus.RUNNING  # stopped, not failed
        assert all(n.status != NodeStatus.FAILED for n in store.runs.node_runs(run_id))
        outcome = await engine.run(run_id)  # the same engine continues it (as `plait serve` does)
        await engine.aclose()
        return outcome.status

    assert asyncio.run(scenario()) == RunStatus.COMPLETED
    assert store.runs.get(run_id).output == {"said": "ok"}
    assert len(counts.arrivals) == 2  # the answer the database never took was asked again, once
