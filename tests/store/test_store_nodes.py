"""Node runs: one winner per activation, results committed once by their owner and never
modified, takeover after a crash, skips, ordering, JSON fidelity, and the per-node cost."""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest
from sqlalchemy import select, update
from sqlalchemy.exc import DBAPIError
from store_helpers import graph, new_run, spawn_workers

from plait.model.enums import NodeStatus, RunStatus
from plait.store import NodeRunRecord, Store
from plait.store.models import GRAPH_RUN, NODE_RUN
from plait.store.writes import Finish, Watch


def only(store: Store, run_id: str) -> NodeRunRecord:
    (record,) = store.runs.node_runs(run_id)
    return record


def test_claim_inserts_a_running_activation(store: Store) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    assert (claim.run_id, claim.node_id, claim.activation, claim.status) == (run.id, "classify", 0, "running")
    assert (claim.owner, claim.claims, claim.output, claim.attempts) == ("engine-a", 1, None, [])
    assert claim.started_at == claim.created_at
    assert only(store, run.id) == claim  # what the fast path returns is exactly what is stored


def test_second_claim_of_an_activation_loses(store: Store) -> None:
    run = new_run(store)
    assert store.runs.claim_node(run.id, "classify", 0, "engine-a") is not None
    assert store.runs.claim_node(run.id, "classify", 0, "engine-b") is None
    assert store.runs.claim_node(run.id, "classify", 0, "engine-a") is None  # its owner is running it already
    assert store.runs.claim_node(run.id, "classify", 1, "engine-b") is not None  # another activation


@pytest.mark.parametrize("status", [NodeStatus.COMPLETED, NodeStatus.FAILED])
def test_a_finished_activation_is_never_claimed_again(store: Store, status: NodeStatus) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    assert store.runs.finish_node(claim.id, "engine-a", status=status, output={"label": "bug"})
    assert store.runs.acquire_lease(run.id, "engine-b", 30)  # even the lease holder cannot
    assert store.runs.claim_node(run.id, "classify", 0, "engine-b") is None
    assert store.runs.claim_node(run.id, "classify", 0, "engine-a") is None


def test_finish_commits_everything_once(store: Store) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    snapshot = {"rendered_user_prompt": "Label: hi", "model_config": {"model": "m", "temperature": 0.3}}
    attempts = [{"n": 1, "error": "invalid JSON"}, {"n": 2, "ok": True}]
    assert store.runs.finish_node(
        claim.id,
        "engine-a",
        status=NodeStatus.COMPLETED,
        output={"label": "bug"},
        input_snapshot=snapshot,
        attempts=attempts,
        tokens_input=12,
        tokens_output=3,
        cost_usd=0.002,
    )
    done = only(store, run.id)
    assert (done.status, done.output, done.input_snapshot, done.attempts) == (
        "completed",
        {"label": "bug"},
        snapshot,
        attempts,
    )
    assert (done.tokens_input, done.tokens_output, done.cost_usd, done.error) == (12, 3, 0.002, None)
    assert done.completed_at is not None
    assert done.completed_at >= done.started_at


def test_only_the_owner_finishes_and_only_once(store: Store) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    assert store.runs.finish_node(claim.id, "intruder", status=NodeStatus.COMPLETED, output={"label": "x"}) is False
    assert only(store, run.id).status == "running"
    assert store.runs.finish_node(claim.id, "engine-a", status=NodeStatus.COMPLETED, output={"label": "first"})
    before = only(store, run.id)
    assert store.runs.finish_node(claim.id, "engine-a", status=NodeStatus.FAILED, output={"label": "second"}) is False
    assert store.runs.finish_node(claim.id, "engine-a", status=NodeStatus.COMPLETED, error={"m": "x"}) is False
    assert only(store, run.id) == before
    assert store.runs.finish_node("no-such-node-run", "engine-a", status=NodeStatus.COMPLETED) is False


def test_a_watch_reads_its_runs_corrections_with_the_totals_or_alone(store: Store) -> None:
    """The engine learns of corrections by a watch in each commit: read in the UPDATE that adds
    what the commit's nodes spent to the run's totals, or by itself when they spent nothing, and
    not at all after a write the rest of its unit depends on changed nothing."""
    run = new_run(store)
    with store.db.begin() as conn:
        conn.execute(update(GRAPH_RUN).where(GRAPH_RUN.c.id == run.id).values(corrections=3))
    paid, free = (store.runs.claim_node(run.id, node, 0, "engine-a") for node in ("classify", "shout"))
    assert paid is not None
    assert free is not None
    spent = Finish(
        run.id, paid.id, "engine-a", NodeStatus.COMPLETED, {"label": "bug"}, tokens_input=10, tokens_output=2
    )
    unpaid = Finish(run.id, free.id, "engine-a", NodeStatus.COMPLETED, {"label": "BUG"})
    assert store.runs.nodes.write([[spent, Watch(run.id)], [unpaid, Watch(run.id)]]) == [[True, 3], [True, 3]]
    assert (store.runs.get(run.id).tokens_input, store.runs.get(run.id).tokens_output) == (10, 2)
    assert store.runs.nodes.write_one([Watch(run.id)]) == [3]
    assert store.runs.nodes.write_one([unpaid, Watch(run.id)]) == [False, None]  # finished already: not read


def test_finish_needs_a_final_status(store: Store) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    with pytest.raises(ValueError, match="not 'running'"):
        store.runs.finish_node(claim.id, "engine-a", status=NodeStatus.RUNNING)
    with pytest.raises(ValueError, match=r"parked .* has no output yet"):
        store.runs.finish_node(claim.id, "engine-a", status=NodeStatus.PENDING, output={"x": 1})
    assert only(store, run.id).status == "running"


def test_the_database_refuses_to_modify_a_written_output(store: Store) -> None:
    """SPEC §4: output_json is never modified; corrections go to override_json."""
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    store.runs.finish_node(claim.id, "engine-a", status=NodeStatus.COMPLETED, output={"label": "bug"})
    for value in ({"label": "praise"}, None):
        with pytest.raises(DBAPIError, match="output_json is immutable"), store.db.begin() as conn:
            conn.execute(update(NODE_RUN).where(NODE_RUN.c.id == claim.id).values(output_json=value))
    with store.db.begin() as conn:  # rewriting the same value, or other columns, is allowed
        conn.execute(update(NODE_RUN).where(NODE_RUN.c.id == claim.id).values(output_json={"label": "bug"}))
        conn.execute(
            update(NODE_RUN)
            .where(NODE_RUN.c.id == claim.id)
            .values(override_json={"label": "praise"}, override_by="ana", override_at=time.time(), status="overridden")
        )
    record = only(store, run.id)
    assert record.output == {"label": "bug"}
    assert record.override == {"label": "praise"}
    assert record.effective_output == {"label": "praise"}
    assert store.runs.claim_node(run.id, "classify", 0, "engine-b") is None  # overridden is final too


def test_effective_output_is_the_output_without_an_override(store: Store) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    store.runs.finish_node(claim.id, "engine-a", status=NodeStatus.COMPLETED, output={"label": "bug"})
    record = only(store, run.id)
    assert (record.override, record.effective_output) == (None, {"label": "bug"})


def test_a_crashed_owners_activation_is_taken_over_by_the_new_lease_holder(store: Store) -> None:
    run = new_run(store)
    assert store.runs.acquire_lease(run.id, "crashed", 0.05)
    lost = store.runs.claim_node(run.id, "classify", 0, "crashed")
    assert lost is not None
    # Without the run's lease nobody may take a running activation over.
    assert store.runs.claim_node(run.id, "classify", 0, "rescuer") is None
    time.sleep(0.1)
    assert store.runs.claim_node(run.id, "classify", 0, "rescuer") is None  # lease expired, but not held
    assert store.runs.acquire_lease(run.id, "rescuer", 30)
    taken = store.runs.claim_node(run.id, "classify", 0, "rescuer")
    assert taken is not None
    assert (taken.id, taken.owner, taken.claims, taken.status) == (lost.id, "rescuer", 2, "running")
    assert taken.started_at is not None
    assert taken.started_at > lost.started_at
    # The crashed engine wakes up: its late result is refused, the rescuer's is kept.
    assert store.runs.finish_node(lost.id, "crashed", status=NodeStatus.COMPLETED, output={"label": "late"}) is False
    assert store.runs.finish_node(taken.id, "rescuer", status=NodeStatus.COMPLETED, output={"label": "bug"})
    assert only(store, run.id).output == {"label": "bug"}


def test_a_parked_pending_activation_is_claimed_again(store: Store) -> None:
    """A HUMAN_REVIEW node parks its activation as `pending`; resuming claims it again."""
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "review", 0, "engine-a")
    assert claim is not None
    assert store.runs.finish_node(
        claim.id, "engine-a", status=NodeStatus.PENDING, input_snapshot={"review_prompt": "Check it"}
    )
    parked = only(store, run.id)
    assert (parked.status, parked.output, parked.input_snapshot) == ("pending", None, {"review_prompt": "Check it"})
    assert parked.completed_at is None
    again = store.runs.claim_node(run.id, "review", 0, "engine-a")
    assert again is not None
    assert (again.id, again.status, again.claims) == (claim.id, "running", 2)
    assert store.runs.claim_node(run.id, "review", 0, "engine-b") is None
    assert store.runs.finish_node(again.id, "engine-a", status=NodeStatus.COMPLETED, output={"ok": True})
    assert only(store, run.id).output == {"ok": True}


def test_record_skipped_is_idempotent_and_final(store: Store) -> None:
    run = new_run(store)
    store.runs.record_skipped(run.id, "file_bug", 0)
    store.runs.record_skipped(run.id, "file_bug", 0)
    skipped = only(store, run.id)
    assert (skipped.status, skipped.owner, skipped.claims, skipped.output) == ("skipped", None, 0, None)
    assert skipped.completed_at is not None
    assert store.runs.claim_node(run.id, "file_bug", 0, "engine-a") is None
    # Skipping an activation that is already claimed changes nothing.
    claim = store.runs.claim_node(run.id, "other", 0, "engine-a")
    store.runs.record_skipped(run.id, "other", 0)
    assert {r.node_id: r.status for r in store.runs.node_runs(run.id)} == {"file_bug": "skipped", "other": "running"}
    assert claim is not None


def test_node_runs_lists_every_activation_in_creation_order(store: Store) -> None:
    run = new_run(store)
    assert store.runs.node_runs(run.id) == []
    order = [("b", 0), ("a", 0), ("b", 1), ("c", 0), ("a", 1)]
    for node_id, activation in order:
        if node_id == "c":
            store.runs.record_skipped(run.id, node_id, activation)
        else:
            assert store.runs.claim_node(run.id, node_id, activation, "engine-a") is not None
    other = new_run(store)
    store.runs.claim_node(other.id, "a", 0, "engine-a")
    assert [(r.node_id, r.activation) for r in store.runs.node_runs(run.id)] == order


def test_json_round_trip_of_unicode_and_nested_values(store: Store) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    output = {
        "text": "Ünïcödé — 中文 — עברית — 🚀🧵",
        "nested": {"a": [1, -2.5, 1e-9, True, False, None, [[], {}]], "b": {"c": {"d": "deep"}}},
        "escapes": 'tab\t quote" backslash\\ newline\n nul-free \u2028',
        "_schema_id": "label",
        "_schema_version": "1.0.0",
    }
    error = {"kind": "schema", "errors": [{"path": ["é"], "message": "bad ✗"}]}
    store.runs.finish_node(
        claim.id, "engine-a", status=NodeStatus.FAILED, output=output, error=error, attempts=[{"raw": "🙂"}]
    )
    record = only(store, run.id)
    assert (record.output, record.error, record.attempts) == (output, error, [{"raw": "🙂"}])
    assert json.dumps(record.output, sort_keys=True) == json.dumps(output, sort_keys=True)


def test_object_key_order_survives_the_store(store: Store) -> None:
    """Key order is meaning: it is the order objects render in prompts, and a JSON Schema's
    property order is the order a model writes fields in. A resumed run must see it unchanged."""
    output = {"zeta": 1, "reasoning": "first", "a": {"z": 0, "b": 1, "aa": 2}, "answer": "last"}
    run = new_run(store, run_input={"z": 1, "yy": 2, "a": 3})
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    store.runs.finish_node(claim.id, "engine-a", status=NodeStatus.COMPLETED, output=output)
    assert json.dumps(only(store, run.id).output) == json.dumps(output)
    assert list(store.runs.get(run.id).input) == ["z", "yy", "a"]
    schema = {"type": "object", "properties": {"reasoning": {"type": "string"}, "answer": {"type": "string"}}}
    stored = store.graphs.save(graph("ordered", schemas=[{"id": "label", "schema": schema}]))
    assert list(store.graphs.get(stored.graph_id).graph.schemas[0].schema_["properties"]) == ["reasoning", "answer"]


def test_null_json_values_are_sql_null(store: Store) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 0, "engine-a")
    assert claim is not None
    store.runs.finish_node(claim.id, "engine-a", status=NodeStatus.FAILED, output=None)
    with store.db.connect() as conn:
        is_null = conn.execute(select(NODE_RUN.c.output_json.is_(None), NODE_RUN.c.override_json.is_(None))).one()
    assert tuple(is_null) == (True, True)


def test_claims_race_between_threads(store: Store, open_store: Callable[[], Store]) -> None:
    run = new_run(store)
    stores = [store, store, open_store(), open_store()]  # shared and separate pools
    nodes = [f"n{i}" for i in range(40)]
    wins: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def claimer(worker: int) -> None:
        target = stores[worker % len(stores)]
        owner = f"thread-{worker}"
        barrier.wait()
        try:
            for node_id in nodes:
                claim = target.runs.claim_node(run.id, node_id, 0, owner)
                if claim is not None:
                    wins.append((node_id, owner))
                    assert target.runs.finish_node(claim.id, owner, status=NodeStatus.COMPLETED, output={"by": owner})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=claimer, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(node for node, _ in wins) == sorted(nodes)  # exactly one winner per node
    records = store.runs.node_runs(run.id)
    assert len(records) == len(nodes)
    assert all(r.status == "completed" and r.claims == 1 for r in records)
    assert {r.node_id: r.output["by"] for r in records} == dict(wins)


def test_claims_race_between_processes(store: Store, db_url: str) -> None:
    run = new_run(store)
    count = 60
    outputs = spawn_workers(
        ["claim", db_url, run.id, "proc-a", str(count)], ["claim", db_url, run.id, "proc-b", str(count)]
    )
    results = [json.loads(line) for line in outputs]
    won = Counter(node for result in results for node in result["won"])
    assert won == Counter({f"n{i}": 1 for i in range(count)})
    assert [r["won"] for r in results] == [r["finished"] for r in results]
    records = store.runs.node_runs(run.id)
    assert len(records) == count
    assert all(r.status == "completed" and r.claims == 1 for r in records)


def test_claim_plus_finish_overhead(store: Store, db_url: str, record_property: Callable[[str, object], None]) -> None:
    """The engine pays this per node. Measured, reported, and bounded loosely (CI machines vary):
    ~0.4 ms on SQLite here; on PostgreSQL it is two durable commits (fsync bound)."""
    run = new_run(store)
    store.runs.set_status(run.id, RunStatus.RUNNING)
    output = {"label": "bug", "text": "x" * 200, "nested": {"a": [1, 2, 3]}}
    snapshot = {"rendered_user_prompt": "y" * 500, "model_config": {"model": "m"}}
    timings = []
    for i in range(250):
        start = time.perf_counter()
        claim = store.runs.claim_node(run.id, f"n{i}", 0, "bench")
        assert claim is not None
        store.runs.finish_node(
            claim.id, "bench", status=NodeStatus.COMPLETED, output=output, input_snapshot=snapshot, tokens_input=10
        )
        timings.append((time.perf_counter() - start) * 1e6)
    median = statistics.median(timings[25:])
    backend = "sqlite" if db_url.startswith("sqlite") else "postgresql"
    record_property(f"claim_finish_median_us_{backend}", round(median))
    print(f"\nclaim_node + finish_node on {backend}: median {median:.0f} µs")
    assert median < (3_000 if backend == "sqlite" else 50_000)
