"""WAIT nodes: a short wait sleeps; a longer one parks the run (paused, `wake_at`, no lease held)
until it is due, keeping its due time across resumes; `until_expr` computes the time. On SQLite
and PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.executors import due_from
from plait.engine.runner import Engine
from plait.model.enums import RunStatus
from plait.store import Store
from tests.engine.test_engine import execute


def graph(tmp_path: Path, wait: dict[str, Any]) -> str:
    nodes = [
        {"id": "first", "type": "TRANSFORM", "transform_expr": "({n: input.n})"},
        {"id": "pause", "type": "WAIT", **wait},
        {"id": "after", "type": "TRANSFORM", "transform_expr": "({n: nodes.first.n + 1})"},
    ]
    edges = [{"source": "first", "target": "pause"}, {"source": "pause", "target": "after"}]
    path = tmp_path / "wait.yaml"
    path.write_text(yaml.safe_dump({"id": "waits", "nodes": nodes, "edges": edges}, sort_keys=False))
    return str(path)


def test_a_short_wait_sleeps_in_the_run(store: Store, tmp_path: Path) -> None:
    started = time.time()
    outcome = execute(store, graph(tmp_path, {"delay_s": 0.3}), None, {"n": 1})
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"n": 2}
    assert time.time() - started >= 0.3


def test_a_longer_wait_parks_the_run_until_it_is_due_and_keeps_its_time(store: Store, tmp_path: Path) -> None:
    path = graph(tmp_path, {"delay_s": 3})
    before = time.time()
    outcome = execute(store, path, None, {"n": 1})
    assert outcome.status == RunStatus.PAUSED
    record = store.runs.get(outcome.run_id)
    assert record.lease_owner is None  # parked: nobody holds it
    assert record.wake_at is not None
    assert before + 3 <= record.wake_at <= time.time() + 3
    assert store.runs.due(time.time()) == []
    assert store.runs.next_wake() == record.wake_at

    # Resumed early, it parks again with the same time (not 3 s from now).

    async def resume() -> Any:
        engine = Engine(store, None)
        try:
            return await engine.run(outcome.run_id)
        finally:
            await engine.aclose()

    assert asyncio.run(resume()).status == RunStatus.PAUSED
    assert store.runs.get(outcome.run_id).wake_at == record.wake_at

    time.sleep(max(0.0, record.wake_at - time.time()) + 0.1)
    assert store.runs.due(time.time()) == [(outcome.run_id, record.wake_at)]
    done = asyncio.run(resume())
    assert done.status == RunStatus.COMPLETED
    assert done.output == {"n": 2}
    assert store.runs.get(outcome.run_id).wake_at is None


def test_until_expr_computes_the_time(store: Store, tmp_path: Path) -> None:
    soon = time.time() + 0.2
    outcome = execute(store, graph(tmp_path, {"until_expr": "input.at"}), None, {"n": 1, "at": soon})
    assert outcome.status == RunStatus.COMPLETED
    assert time.time() >= soon


def test_an_until_expr_that_gives_no_time_fails_the_node(store: Store, tmp_path: Path) -> None:
    outcome = execute(store, graph(tmp_path, {"until_expr": "'next tuesday'"}), None, {"n": 1})
    assert outcome.status == RunStatus.FAILED
    (pause,) = [n for n in store.runs.node_runs(outcome.run_id) if n.node_id == "pause"]
    assert "until_expr gave 'next tuesday': give an ISO 8601 time" in pause.error["message"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1_700_000_000, 1_700_000_000.0),
        ("2026-12-01T10:00:00Z", 1_796_119_200.0),
        ("2026-12-01T11:00:00+01:00", 1_796_119_200.0),
        ("2026-12-01T10:00:00", 1_796_119_200.0),  # no offset: UTC
        ("soon", None),
        (True, None),
        (None, None),
    ],
)
def test_the_times_an_until_expr_may_give(value: Any, expected: float | None) -> None:
    assert due_from(value) == expected
