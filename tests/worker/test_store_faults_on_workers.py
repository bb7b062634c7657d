"""`plait worker` processes on PostgreSQL whose database connections are all dropped
(`pg_terminate_backend`, only this test's backends) while model calls are in flight: a run's
node, and a MAP's items spread over two workers. The answers that then arrive are written on
fresh connections, every run completes, and each call was paid once (a node used to fail with
`internal: recording node ... AdminShutdown`, and the run with it)."""

from __future__ import annotations

import threading

import yaml
from worker_helpers import Cluster, wait_until

from plait.model.enums import NodeStatus, RunStatus
from plait.runs.start import start_run
from tests.conftest import terminate_backends
from tests.worker.counting_server import PAID_THEN_SHAPED, counting_server

ITEMS = 4
MAP = {
    "id": "spread_items",
    "input_schema": {"type": "object", "properties": {"topics": {"type": "array"}}, "required": ["topics"]},
    "nodes": [
        {
            "id": "each",
            "type": "MAP",
            "items": "input.topics",
            "inputs": {"topic": "{{ item }}"},
            "max_concurrency": ITEMS,
            "body": {"nodes": [{"id": "write", "type": "LLM_CALL", "user_prompt_tpl": "A line on {{ input.topic }}"}]},
        }
    ],
    "edges": [{"source": "each", "target": "END"}],
}


def test_a_run_on_a_worker_keeps_its_paid_answer_when_the_database_drops_its_connections(
    cluster: Cluster, pg_schema: str
) -> None:
    gate = threading.Event()
    (cluster.folder / "graph.yaml").write_text(yaml.safe_dump(PAID_THEN_SHAPED))
    with counting_server(latency_s=0.0, gate=gate) as (url, counts):
        cluster.model_at(url)  # the cluster's long lease: no worker dies here, so none pays a call again
        cluster.worker()
        with cluster.store() as store:
            run_id = start_run(store, str(cluster.folder / "graph.yaml"), {}, announce="start")
        try:
            wait_until(lambda: counts.arrivals, 60, "the model call")
            assert terminate_backends(pg_schema) >= 1  # the worker's
        finally:
            gate.set()
        store = cluster.store()
        wait_until(lambda: store.runs.get(run_id).status.ended, 60, "the run to end")
        assert store.runs.get(run_id).status == RunStatus.COMPLETED, cluster.logs()
        assert store.runs.get(run_id).output == {"said": "ok"}
        [a] = [n for n in store.runs.node_runs(run_id) if n.node_id == "a"]
        assert (a.status, a.claims) == (NodeStatus.COMPLETED, 1)
        store.close()
    assert len(counts.arrivals) == 1


def test_a_map_spread_over_workers_keeps_every_paid_answer_when_the_database_drops_its_connections(
    cluster: Cluster, pg_schema: str
) -> None:
    gate = threading.Event()
    (cluster.folder / "graph.yaml").write_text(yaml.safe_dump(MAP))
    topics = [f"topic {i}" for i in range(ITEMS)]
    with counting_server(latency_s=0.0, gate=gate) as (url, counts):
        cluster.model_at(url)  # the cluster's long lease: no worker dies here, so none pays a call again
        cluster.worker()
        cluster.worker()
        with cluster.store() as store:
            run_id = start_run(store, str(cluster.folder / "graph.yaml"), {"topics": topics}, announce="start")
        try:
            wait_until(lambda: len(counts.arrivals) == ITEMS, 90, "every item's model call")
            assert terminate_backends(pg_schema) >= 2  # both workers'
        finally:
            gate.set()
        store = cluster.store()
        wait_until(lambda: store.runs.get(run_id).status.ended, 90, "the MAP's run to end")
        ended = store.runs.get(run_id)
        assert ended.status == RunStatus.COMPLETED, (
            ended.error,
            [(n.node_id, n.error) for n in store.runs.node_runs(run_id)],
            cluster.logs(),
        )
        assert ended.output == ["ok"] * ITEMS
        (map_run,) = store.runs.node_runs(run_id)
        for child in store.runs.children(map_run.id):
            assert child.status == RunStatus.COMPLETED
            [write] = store.runs.node_runs(child.id)
            assert (write.status, write.claims) == (NodeStatus.COMPLETED, 1)
        store.close()
    assert len(counts.arrivals) == ITEMS  # each item paid once
