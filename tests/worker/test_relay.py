"""The relay's reaper, on a real store and a real Redis: a pending run waiting in a long queue
is not announced again (it would only make work), but once the broker lost its data every
pending run that was there is, each once, page after page; a run whose worker is gone is."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from plait.runs.start import start_run
from plait.store import Store
from plait.worker.app import WorkerSettings, make_app
from plait.worker.relay import MARKER, SWEEP_PAGE, Relay

GRAPH = {"id": "g", "nodes": [{"id": "a", "type": "TRANSFORM", "transform_expr": "input"}], "edges": []}


@pytest.fixture
def relay(tmp_path: Path, redis_url: str) -> Iterator[Relay]:
    settings = WorkerSettings(broker=redis_url, queue=f"plait-test-{uuid.uuid4().hex[:8]}", lease_ttl_s=4)
    made = Relay(Store(f"sqlite:///{tmp_path / 'plait.db'}"), make_app(settings), settings, reap=True)
    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(GRAPH))
    made.reap_once()  # the first pass finds the broker new: it sets the marker (nothing to sweep yet)
    yield made
    made.stop()
    made.store.close()


def _pending(relay: Relay, tmp_path: Path, count: int) -> list[str]:
    return [start_run(relay.store, str(tmp_path / "graph.yaml"), {"n": i}) for i in range(count)]


def test_pending_runs_waiting_in_the_queue_are_not_announced_again(relay: Relay, tmp_path: Path) -> None:
    _pending(relay, tmp_path, 5)
    assert relay.reap_once(time.time() + 600) == []  # ten minutes queued: still in the broker
    assert relay.store.outbox.unsent() == 0


def test_after_the_broker_lost_its_data_every_pending_run_is_announced_once(
    relay: Relay, tmp_path: Path, redis_url: str
) -> None:
    import redis

    waiting = _pending(relay, tmp_path, SWEEP_PAGE * 2 + 30)
    with redis.Redis.from_url(redis_url) as client:
        client.delete(MARKER.format(queue=relay.settings.queue))  # what a restart without persistence does
    announced: list[str] = []
    now = time.time() + 1
    for _ in range(5):
        announced += relay.reap_once(now)
    assert sorted(announced) == sorted(waiting)  # each once, though a page holds fewer
    assert relay.store.outbox.unsent() == len(waiting)
    later = _pending(relay, tmp_path, 3)
    assert relay.reap_once(time.time() + 1) == []  # the sweep ended: runs made since are not lost
    assert later


def test_a_running_run_whose_lease_ran_out_is_announced(relay: Relay, tmp_path: Path) -> None:
    (run_id,) = _pending(relay, tmp_path, 1)
    relay.store.runs.begin(run_id, "gone:1:x", 4)  # a worker that took it, then died
    assert relay.reap_once(time.time() + 1) == []  # its lease still holds
    assert relay.reap_once(time.time() + 30) == [run_id]
    assert relay.reap_once(time.time() + 31) == []  # not again within a lease
