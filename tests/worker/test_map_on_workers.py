"""MAP items spread over real `plait worker` processes: each item's child run is announced to
the workers and executed by whichever has a free place, each once; a MAP whose worker has no
place to spare (and no other worker) executes its items itself instead of waiting for ever."""

from __future__ import annotations

import json
import time

import yaml
from worker_helpers import Cluster

from plait.model.enums import NodeStatus, RunStatus

ITEMS = 8
GRAPH = {
    "id": "spread_items",
    "input_schema": {"type": "object", "properties": {"topics": {"type": "array"}}, "required": ["topics"]},
    "nodes": [
        {
            "id": "each",
            "type": "MAP",
            "items": "input.topics",
            "inputs": {"topic": "{{ item }}"},
            "max_concurrency": ITEMS,
            "body": {
                "nodes": [
                    {"id": "write", "type": "LLM_CALL", "user_prompt_tpl": "A line on {{ input.topic }}"},
                    {"id": "shape", "type": "TRANSFORM", "transform_expr": "({topic: input.topic, line: current})"},
                ],
                "edges": [{"source": "write", "target": "shape"}],
            },
        }
    ],
    "edges": [{"source": "each", "target": "END"}],
}


def _setup(cluster: Cluster, delay_ms: int) -> None:
    (cluster.folder / "graph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    model = {"responses": [{"text": "a line", "delay_ms": delay_ms}]}
    (cluster.folder / "model.yaml").write_text(yaml.safe_dump(model))
    (cluster.folder / "input.json").write_text(json.dumps({"topics": [f"topic {i}" for i in range(ITEMS)]}))


def _queued_run(cluster: Cluster) -> dict[str, object]:
    done = cluster.plait("run", "graph.yaml", "--input-file", "input.json", "--json", timeout=180)
    assert done.returncode == 0, done.stderr + cluster.logs()
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _expected() -> list[dict[str, str]]:
    return [{"topic": f"topic {i}", "line": "a line"} for i in range(ITEMS)]


def test_map_items_are_executed_by_every_worker_each_once(cluster: Cluster) -> None:
    _setup(cluster, delay_ms=600)
    cluster.worker()
    cluster.worker()
    result = _queued_run(cluster)
    assert result["output"] == _expected()
    with cluster.store() as store:
        parent = store.runs.get(str(result["run_id"]))
        assert parent.status == RunStatus.COMPLETED
        (map_run,) = store.runs.node_runs(parent.id)
        children = store.runs.children(map_run.id)
        assert [c.child_key for c in children] == list(range(ITEMS))
        owners: set[str] = set()
        for child in children:
            assert child.status == RunStatus.COMPLETED
            node_runs = store.runs.node_runs(child.id)
            assert sorted(n.node_id for n in node_runs) == ["shape", "write"]  # one activation each
            for node_run in node_runs:
                assert node_run.status == NodeStatus.COMPLETED
                assert node_run.claims == 1  # executed once: never claimed again by another engine
                assert node_run.owner is not None
                owners.add(node_run.owner.split(":")[1])  # the process
    assert owners == {str(w.pid) for w in cluster.workers}, "the items ran on both workers"


def test_a_map_whose_worker_has_no_free_place_executes_its_items_itself(cluster: Cluster) -> None:
    _setup(cluster, delay_ms=50)
    (worker,) = [cluster.worker("-c", "1")]  # its one place holds the MAP's own run
    started = time.monotonic()
    result = _queued_run(cluster)
    assert result["output"] == _expected()
    assert time.monotonic() - started < 90  # not waiting on a place nobody frees
    with cluster.store() as store:
        (map_run,) = store.runs.node_runs(str(result["run_id"]))
        for child in store.runs.children(map_run.id):
            assert child.status == RunStatus.COMPLETED
            assert {n.owner.split(":")[1] for n in store.runs.node_runs(child.id) if n.owner} == {str(worker.pid)}
