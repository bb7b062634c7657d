"""Runs: creation pinned to a version, lookups and filters, conditional status changes, leases."""

from __future__ import annotations

import time
import uuid

import pytest
from store_helpers import graph, new_run

from plait.model.enums import NodeStatus, RunStatus
from plait.store import NotFoundError, Store, StoreError


def test_create_pins_the_graph_version_and_starts_pending(store: Store) -> None:
    v1 = store.graphs.save(graph())
    store.graphs.save(graph(description="v2"))
    run = store.runs.create(graph_id=v1.graph_id, graph_version=1, schema_version="1.0.0", input={"text": "hi"})
    assert uuid.UUID(run.id).version == 4
    assert (run.graph_id, run.graph_slug, run.graph_version, run.schema_version) == (v1.graph_id, "demo", 1, "1.0.0")
    assert run.status is RunStatus.PENDING
    assert run.input == {"text": "hi"}
    assert (run.output, run.error, run.started_at, run.completed_at) == (None, None, None, None)
    assert (run.lease_owner, run.lease_expires_at) == (None, None)
    assert (run.tokens_input, run.tokens_output, run.cost_usd) == (0, 0, 0.0)
    assert run.created_at == run.updated_at
    assert store.runs.get(run.id) == run


def test_create_for_a_graph_version_not_in_the_store_is_refused(store: Store) -> None:
    stored = store.graphs.save(graph())
    with pytest.raises(NotFoundError, match=r"graph \S+ version 7: that graph version is not in"):
        store.runs.create(graph_id=stored.graph_id, graph_version=7, schema_version="1.0.0", input={})
    with pytest.raises(NotFoundError, match="save the graph first"):
        store.runs.create(graph_id=str(uuid.uuid4()), graph_version=1, schema_version="1.0.0", input={})


def test_unknown_run_id_says_how_to_find_one(store: Store) -> None:
    with pytest.raises(NotFoundError, match=r"no run 'r-404' in .*`plait runs list` shows the run ids"):
        store.runs.get("r-404")
    for call in (
        lambda: store.runs.set_status("r-404", RunStatus.RUNNING),
        lambda: store.runs.acquire_lease("r-404", "me", 10),
        lambda: store.runs.renew_lease("r-404", "me", 10),
        lambda: store.runs.claim_node("r-404", "a", 0, "me"),
        lambda: store.runs.record_skipped("r-404", "a", 0),
        lambda: store.runs.node_runs("r-404"),
    ):
        with pytest.raises(NotFoundError, match="no run 'r-404'"):
            call()


def test_list_filters_by_graph_and_status_newest_first(store: Store) -> None:
    a1 = new_run(store, "graph_a")
    a2 = new_run(store, "graph_a")
    b1 = new_run(store, "graph_b")
    store.runs.set_status(a2.id, RunStatus.COMPLETED)
    assert [r.id for r in store.runs.list()] == [b1.id, a2.id, a1.id]
    assert [r.id for r in store.runs.list(graph="graph_a")] == [a2.id, a1.id]
    assert [r.id for r in store.runs.list(graph=b1.graph_id)] == [b1.id]
    assert [r.id for r in store.runs.list(status="completed")] == [a2.id]
    assert [r.id for r in store.runs.list(graph="graph_a", status=RunStatus.PENDING)] == [a1.id]
    assert [r.id for r in store.runs.list(limit=2)] == [b1.id, a2.id]
    assert store.runs.list(graph="nope") == []
    with pytest.raises(StoreError, match="unknown run status 'bogus': use one of pending, running, paused"):
        store.runs.list(status="bogus")


def test_set_status_is_conditional(store: Store) -> None:
    run = new_run(store)
    assert store.runs.set_status(run.id, RunStatus.RUNNING, expected={RunStatus.COMPLETED}) is False
    assert store.runs.get(run.id).status is RunStatus.PENDING
    assert store.runs.set_status(run.id, RunStatus.RUNNING, expected={RunStatus.PENDING, RunStatus.PAUSED})
    assert store.runs.get(run.id).status is RunStatus.RUNNING
    assert store.runs.set_status(run.id, RunStatus.PAUSED, expected=[]) is False


def test_set_status_stamps_times_and_writes_output_or_error(store: Store) -> None:
    run = new_run(store)
    store.runs.set_status(run.id, RunStatus.RUNNING)
    started = store.runs.get(run.id).started_at
    assert started is not None
    store.runs.set_status(run.id, RunStatus.PAUSED)
    time.sleep(0.01)
    store.runs.set_status(run.id, RunStatus.RUNNING)
    resumed = store.runs.get(run.id)
    assert (resumed.started_at, resumed.completed_at) == (started, None)  # the first start is kept
    store.runs.set_status(run.id, RunStatus.COMPLETED, output={"answer": "42 ✓"})
    done = store.runs.get(run.id)
    assert done.status is RunStatus.COMPLETED
    assert done.output == {"answer": "42 ✓"}
    assert done.completed_at is not None
    assert done.completed_at >= started
    assert done.updated_at >= done.created_at

    failed = new_run(store)
    error = {"kind": "node_failed", "node_id": "classify", "message": "boom"}
    assert store.runs.set_status(failed.id, RunStatus.FAILED, expected={RunStatus.PENDING}, error=error)
    got = store.runs.get(failed.id)
    assert (got.status, got.error, got.output) == (RunStatus.FAILED, error, None)
    assert got.completed_at is not None


def test_lease_is_exclusive_renewable_and_releasable(store: Store) -> None:
    run = new_run(store)
    assert store.runs.acquire_lease(run.id, "engine-a", 30)
    assert store.runs.acquire_lease(run.id, "engine-a", 30)  # re-entrant for its holder
    assert store.runs.acquire_lease(run.id, "engine-b", 30) is False
    held = store.runs.get(run.id)
    assert held.lease_owner == "engine-a"
    assert held.lease_expires_at is not None
    assert held.lease_expires_at > time.time() + 20
    assert store.runs.renew_lease(run.id, "engine-a", 60)
    assert store.runs.renew_lease(run.id, "engine-b", 60) is False
    store.runs.release_lease(run.id, "engine-b")  # not the holder: nothing happens
    assert store.runs.get(run.id).lease_owner == "engine-a"
    store.runs.release_lease(run.id, "engine-a")
    assert (store.runs.get(run.id).lease_owner, store.runs.get(run.id).lease_expires_at) == (None, None)
    assert store.runs.acquire_lease(run.id, "engine-b", 30)


def test_an_expired_lease_is_taken_over_and_the_old_holder_loses_it(store: Store) -> None:
    run = new_run(store)
    assert store.runs.acquire_lease(run.id, "crashed", 0.05)
    assert store.runs.acquire_lease(run.id, "rescuer", 30) is False
    time.sleep(0.1)
    assert store.runs.acquire_lease(run.id, "rescuer", 30)
    assert store.runs.get(run.id).lease_owner == "rescuer"
    assert store.runs.renew_lease(run.id, "crashed", 30) is False


def test_steal_lease_only_from_the_named_holder(store: Store) -> None:
    run = new_run(store)
    assert store.runs.acquire_lease(run.id, "dead-pid", 300)
    assert store.runs.steal_lease(run.id, "someone-else", "me", 30) is False
    assert store.runs.steal_lease(run.id, "dead-pid", "me", 30)
    assert store.runs.get(run.id).lease_owner == "me"
    assert store.runs.steal_lease(run.id, "dead-pid", "third", 30) is False


def test_node_costs_add_up_on_the_run(store: Store) -> None:
    run = new_run(store)
    for i, (tin, tout, cost) in enumerate([(100, 20, 0.25), (50, 5, 0.5), (0, 0, 0.0)]):
        claim = store.runs.claim_node(run.id, f"n{i}", 0, "me")
        assert claim is not None
        assert store.runs.finish_node(
            claim.id, "me", status=NodeStatus.COMPLETED, tokens_input=tin, tokens_output=tout, cost_usd=cost
        )
    got = store.runs.get(run.id)
    assert (got.tokens_input, got.tokens_output, got.cost_usd) == (150, 25, 0.75)
    # A refused finish adds nothing.
    assert store.runs.finish_node(claim.id, "me", status=NodeStatus.COMPLETED, tokens_input=999) is False
    assert store.runs.get(run.id).tokens_input == 150


def test_json_input_round_trips(store: Store) -> None:
    data = {
        "text": "naïve café — 日本語 — emoji 🧵",
        "nested": {"list": [1, 2.5, True, None, {"deep": ["x"]}], "empty": {}, "zero": 0},
        "big": 2**53,
        "quote": 'a "b" \\ c \n d',
    }
    run = new_run(store, run_input=data)
    assert store.runs.get(run.id).input == data
