"""Stopping a run mid-node (what pause, cancel and a server shutdown do): the node being executed
goes back to `pending`, the lease is given up, and the same engine (or any other) continues."""

from __future__ import annotations

import asyncio
from pathlib import Path

from plait.engine.runner import Engine, RunOutcome
from plait.model.enums import NodeStatus, RunStatus
from plait.runs.start import start_run
from plait.store import Store, current_activations
from tests.engine.test_engine import calls, graph_file, llm, script


def test_a_stopped_run_releases_its_node_and_the_same_engine_finishes_it(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [llm("first"), llm("slow")],
        [
            {"source": "first", "target": "slow", "schema_id": "text"},
            {"source": "slow", "target": "END", "schema_id": "text"},
        ],
    )
    provider = script(
        tmp_path,
        [
            {"node": "first", "output": {"text": "one"}},
            {"node": "slow", "output": {"text": "two"}, "delay_ms": 1500},
        ],
    )
    run_id = start_run(store, graph, {})

    async def go() -> RunOutcome:
        engine = Engine(store, provider)
        try:
            task = asyncio.create_task(engine.run(run_id))
            while len(calls(tmp_path)) < 2:  # `slow` is being executed
                await asyncio.sleep(0.02)
            task.cancel()
            await asyncio.wait({task})
            record = store.runs.get(run_id)
            assert record.lease_owner is None
            slow = current_activations(store.runs.node_runs(run_id))["slow"]
            assert (slow.status, slow.owner) == (NodeStatus.PENDING, None)
            return await engine.run(run_id)  # the same engine takes the node up again
        finally:
            await engine.aclose()

    outcome = asyncio.run(go())
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert outcome.output == {"text": "two"}
    assert [c["node"] for c in calls(tmp_path)] == ["first", "slow", "slow"]  # only the interrupted node again
    assert [n.status for n in store.runs.node_runs(run_id)] == [NodeStatus.COMPLETED, NodeStatus.COMPLETED]
