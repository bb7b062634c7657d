"""A SQLite store whose disk is full while a run writes to it: the engine stops the run with an
error that names the database, says it is full and how to fix it; nothing of the refused write is
kept (the rows are consistent, no node failed or half-recorded), and once space is freed the run
resumes to the output of an uninterrupted run, with one node run per node.

The disk is made full with SQLite's `PRAGMA max_page_count` set to the file's current size on
every connection of the store (the same `SQLITE_FULL` a full disk gives), not with a small
mounted file system: that needs privileges CI machines do not always grant."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import event

from plait.engine.runner import Engine
from plait.model.enums import NodeStatus, RunStatus
from plait.runs.start import start_run
from plait.store import Store
from plait.store.faults import StoreFull, full, transient

BIG = 400_000
"""Characters of the middle node's output: far more than the free space of a fresh store's pages."""
GRAPH = {
    "id": "fills_the_disk",
    "nodes": [
        {"id": "small", "type": "TRANSFORM", "transform_expr": "({n: 1})"},
        {"id": "big", "type": "TRANSFORM", "transform_expr": f"({{text: 'x'.repeat({BIG}), n: current.n}})"},
        {"id": "after", "type": "TRANSFORM", "transform_expr": "({n: current.n + 1, length: current.text.length})"},
    ],
    "edges": [
        {"source": "small", "target": "big"},
        {"source": "big", "target": "after"},
        {"source": "after", "target": "END"},
    ],
}
UNLIMITED = 1_073_741_823


class Disk:
    """Whether the store's disk is full: applied to every connection the store hands out, and to
    those it keeps, at once when it changes."""

    def __init__(self, store: Store) -> None:
        self.full = False
        self._seen: list[Any] = []
        event.listen(store.db.pool, "checkout", self._checkout)

    def _checkout(self, dbapi_connection: Any, _record: object, _proxy: object) -> None:
        if dbapi_connection not in self._seen:
            self._seen.append(dbapi_connection)
        self._apply(dbapi_connection)

    def _apply(self, connection: Any) -> None:
        pages = connection.execute("PRAGMA page_count").fetchone()[0] if self.full else UNLIMITED
        connection.execute(f"PRAGMA max_page_count={pages}")

    def set(self, full: bool) -> None:
        self.full = full
        for connection in self._seen:
            self._apply(connection)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(GRAPH))
    with Store(f"sqlite:///{tmp_path / 'plait.db'}") as opened:
        yield opened


async def _drive(store: Store, run_id: str) -> Any:
    engine = Engine(store)
    try:
        return await engine.run(run_id)
    finally:
        await engine.aclose()


def test_a_run_on_a_full_disk_stops_clearly_keeps_nothing_half_written_and_resumes(
    sqlite_store: Store, tmp_path: Path
) -> None:
    store = sqlite_store
    disk = Disk(store)
    run_id = start_run(store, str(tmp_path / "graph.yaml"), {})
    disk.set(True)
    with pytest.raises(StoreFull) as stopped:
        asyncio.run(_drive(store, run_id))
    message = str(stopped.value)
    assert str(tmp_path / "plait.db") in message  # where
    assert "is full (database or disk is full)" in message  # what
    assert "free space on the disk" in message  # how to fix
    assert stopped.value.code == "store_full"

    disk.set(False)
    assert store.runs.get(run_id).status == RunStatus.RUNNING  # stopped, not failed: resumable
    nodes = store.runs.node_runs(run_id)
    assert all(n.status != NodeStatus.FAILED for n in nodes), [(n.node_id, n.status, n.error) for n in nodes]
    assert "after" not in {n.node_id for n in nodes}  # nothing ran past the refused write
    big = [n for n in nodes if n.node_id == "big"]
    assert all(n.status != NodeStatus.COMPLETED and n.output is None for n in big)  # no half result
    with sqlite3.connect(tmp_path / "plait.db") as check:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    outcome = asyncio.run(_drive(store, run_id))  # space freed: as `plait resume` does
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert store.runs.get(run_id).output == {"n": 2, "length": BIG}
    nodes = store.runs.node_runs(run_id)
    assert sorted(n.node_id for n in nodes) == ["after", "big", "small"]  # one node run per node
    assert all(n.status == NodeStatus.COMPLETED for n in nodes)


def test_a_full_database_is_told_apart_from_faults_a_retry_survives() -> None:
    """Full is not retried by the engine's group commit (only freeing space helps) and is not an
    error in what was written either: its own kind, on SQLite and PostgreSQL (SQLSTATE 53100)."""

    class DiskFull(Exception):
        sqlstate = "53100"

    assert full(sqlite3.OperationalError("database or disk is full"))
    assert not transient(sqlite3.OperationalError("database or disk is full"))
    assert full(DiskFull("could not extend file"))
    assert not full(sqlite3.OperationalError("database is locked"))
    assert not full(sqlite3.IntegrityError("UNIQUE constraint failed"))
