"""A settings change reaches a real `plait worker` through the shared store, without a restart,
on SQLite and PostgreSQL: the `chat` role moved from one provider to another while a run's call
is in flight on the first; the next run is answered by the second, and the run in flight
finishes on the first."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from worker_helpers import Cluster, wait_until

from plait.model.enums import RunStatus
from plait.runs.settings import change
from plait.runs.start import start_run
from plait.store import RunRecord
from tests.worker.counting_server import Counts, counting_server

GRAPH = {
    "id": "ask",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "nodes": [
        {"id": "think", "type": "LLM_CALL", "user_prompt_tpl": "Think about {{ input.text }}"},
        {"id": "shape", "type": "TRANSFORM", "transform_expr": "({answer: current})"},
    ],
    "edges": [{"source": "think", "target": "shape"}, {"source": "shape", "target": "END"}],
}


@pytest.fixture
def gated() -> Iterator[tuple[str, threading.Event, Counts]]:
    gate = threading.Event()
    with counting_server(latency_s=0, gate=gate) as (url, counts):
        yield url, gate, counts
        gate.set()


@pytest.fixture
def cluster(
    tmp_path: Path, db_url: str, redis_url: str, gated: tuple[str, threading.Event, Counts]
) -> Iterator[Cluster]:
    """A worker deployment on the test's database (either backend): `old` (the gated server)
    serves `chat`, `new` answers "from new"."""
    url = gated[0]
    queue = f"plait-test-{uuid.uuid4().hex[:8]}"
    (tmp_path / "new.yaml").write_text(json.dumps({"responses": [{"text": "from new"}]}))
    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    config = tmp_path / "plait.toml"
    config.write_text(
        f'[[providers]]\nid = "old"\nkind = "openai"\nbase_url = "{url}"\nmodels = [{{ name = "m" }}]\n'
        '[[providers]]\nid = "new"\nkind = "scripted"\nfile = "new.yaml"\n'
        '[roles]\nchat = "old/m"\n'
        f'[workers]\nbroker = "{redis_url}"\nqueue = "{queue}"\nlease_ttl_s = 4\n'
    )
    made = Cluster(tmp_path, db_url, redis_url, queue, config)
    try:
        yield made
    finally:
        made.stop()


def test_a_role_change_reaches_a_running_worker_for_its_next_run(
    cluster: Cluster, gated: tuple[str, threading.Event, Counts]
) -> None:
    _, gate, counts = gated
    graph = str(cluster.folder / "graph.yaml")
    cluster.worker()
    with cluster.store() as store:
        first = start_run(store, graph, {"text": "a"}, announce="start")
    wait_until(lambda: counts.in_flight == 1, 90, "the first run's call to reach the old provider")

    with cluster.store() as store:
        changed = change(store, str(cluster.config), {"roles": {"chat": ["new/scripted"]}}, by="ops", base_revision=0)
        assert changed.revision == 1
        second = start_run(store, graph, {"text": "b"}, announce="start")

    def finished(run_id: str) -> RunRecord | None:
        with cluster.store() as store:
            run = store.runs.get(run_id)
        return run if run.status in (RunStatus.COMPLETED, RunStatus.FAILED) else None

    done = wait_until(lambda: finished(second), 90, "the second run to end")
    assert done.output == {"answer": "from new"}, cluster.logs()
    assert counts.in_flight == 1  # the first run's call still held

    gate.set()
    held = wait_until(lambda: finished(first), 90, "the first run to end")
    assert held.output == {"answer": "ok"}, cluster.logs()
    with cluster.store() as store:
        think = {
            r.run_id: r for r in (*store.runs.node_runs(first), *store.runs.node_runs(second)) if r.node_id == "think"
        }
    assert think[first].attempts[-1]["provider"] == "old"
    assert think[second].attempts[-1]["provider"] == "new"
