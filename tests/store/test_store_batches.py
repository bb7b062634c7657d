"""Batched node-run writes (the engine's group commit) and `begin`: many units in one
transaction, a unit that depends on its Finish, a bad unit isolated from the good ones, and
taking a run over in one step. SQLite and PostgreSQL (the `store` fixture)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from store_helpers import new_run

from plait.model.enums import NodeStatus, RunStatus
from plait.store import NodeRunRecord, NotFoundError, Store
from plait.store.writes import Claim, EndRun, Finish, Skip


def by_node(store: Store, run_id: str) -> dict[str, NodeRunRecord]:
    return {r.node_id: r for r in store.runs.node_runs(run_id)}


def test_units_of_several_runs_commit_together_with_their_results(store: Store) -> None:
    first, second = new_run(store, "one"), new_run(store, "two")
    claimed = store.runs.nodes.write([[Claim(first.id, "a", 1, "eng")], [Claim(second.id, "a", 1, "eng")]])
    a1, a2 = (outcome[0] for outcome in claimed)  # type: ignore[index]
    assert isinstance(a1, NodeRunRecord)
    assert isinstance(a2, NodeRunRecord)

    outcomes = store.runs.nodes.write(
        [
            [
                Finish(first.id, a1.id, "eng", NodeStatus.COMPLETED, {"x": 1}, tokens_input=7, cost_usd=0.5),
                Claim(first.id, "b", 1, "eng"),
                Skip(first.id, "c", 1),
            ],
            [Finish(second.id, a2.id, "eng", NodeStatus.FAILED, error={"kind": "schema"}, tokens_output=3)],
        ]
    )
    assert outcomes[0][0] is True
    assert isinstance(outcomes[0][1], NodeRunRecord)
    assert outcomes[0][2] is None
    assert outcomes[1] == [True]
    rows = by_node(store, first.id)
    assert (rows["a"].status, rows["a"].output, rows["b"].status, rows["c"].status) == (
        "completed",
        {"x": 1},
        "running",
        "skipped",
    )
    assert by_node(store, second.id)["a"].error == {"kind": "schema"}
    totals = [
        (r.tokens_input, r.tokens_output, r.cost_usd) for r in (store.runs.get(first.id), store.runs.get(second.id))
    ]
    assert totals == [(7, 0, 0.5), (0, 3, 0.0)]


def test_a_finish_that_finds_nothing_to_change_ends_its_unit(store: Store) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "a", 1, "eng")
    assert claim is not None
    unit = [Finish(run.id, claim.id, "intruder", NodeStatus.COMPLETED, {"x": 1}), Claim(run.id, "b", 1, "intruder")]
    assert store.runs.nodes.write([unit]) == [[False, None]]
    assert set(by_node(store, run.id)) == {"a"}, "the successor's claim depended on the finish and was not written"


def test_a_unit_naming_an_unknown_run_fails_alone(store: Store) -> None:
    run = new_run(store)
    outcomes = store.runs.nodes.write([[Claim(run.id, "a", 1, "eng")], [Claim("no-such-run", "a", 1, "eng")]])
    assert isinstance(outcomes[0][0], NodeRunRecord)  # type: ignore[index]
    assert isinstance(outcomes[1], NotFoundError)
    assert "no run 'no-such-run'" in str(outcomes[1])
    assert set(by_node(store, run.id)) == {"a"}


def test_end_run_writes_the_outcome_and_frees_the_lease_only_for_its_holder(store: Store) -> None:
    run = new_run(store)
    assert store.runs.acquire_lease(run.id, "eng", 30)
    assert store.runs.nodes.write([[EndRun(run.id, "other", RunStatus.COMPLETED, output={"y": 1})]]) == [[False]]
    assert store.runs.nodes.write([[EndRun(run.id, "eng", RunStatus.COMPLETED, output={"y": 1})]]) == [[True]]
    ended = store.runs.get(run.id)
    assert (ended.status, ended.output, ended.lease_owner) == ("completed", {"y": 1}, None)
    assert ended.completed_at is not None


def test_begin_takes_the_lease_and_marks_the_run_running(store: Store) -> None:
    run = new_run(store)
    before, acquired = store.runs.begin(run.id, "eng", 30)
    assert acquired
    assert before.status == "pending"
    assert before.started_at is None
    now = store.runs.get(run.id)
    assert (now.status, now.lease_owner) == ("running", "eng")
    assert now.started_at is not None
    again, acquired = store.runs.begin(run.id, "rival", 30)
    assert not acquired
    assert again.lease_owner == "eng"
    resumed, acquired = store.runs.begin(run.id, "eng", 30)  # its holder may begin again (resume)
    assert acquired
    assert resumed.started_at == now.started_at


def test_begin_refused_by_the_check_changes_nothing(store: Store) -> None:
    run = new_run(store)

    def refuse(record: object) -> None:
        raise RuntimeError("cannot execute this graph")

    with pytest.raises(RuntimeError, match="cannot execute"):
        store.runs.begin(run.id, "eng", 30, check=refuse)
    after = store.runs.get(run.id)
    assert (after.status, after.lease_owner, after.started_at) == ("pending", None, None)


def test_begin_leaves_a_finished_run_alone(store: Store) -> None:
    run = new_run(store)
    store.runs.set_status(run.id, RunStatus.COMPLETED, output={"done": True})
    record, acquired = store.runs.begin(run.id, "eng", 30)
    assert not acquired
    assert record.status == "completed"
    assert store.runs.get(run.id).lease_owner is None
    with pytest.raises(NotFoundError, match="no run 'r-404'"):
        store.runs.begin("r-404", "eng", 30)


def test_close_gives_back_the_connections_the_repositories_keep(store: Store) -> None:
    run = new_run(store)
    store.runs.begin(run.id, "eng", 30)
    store.graphs.get("demo")
    store.runs.nodes.write([[Claim(run.id, "a", 1, "eng")]])
    store.close()
    assert store.db.pool.checkedout() == 0  # type: ignore[attr-defined]


def test_the_wal_is_checkpointed_in_the_background_not_by_the_engines_commits(tmp_path: Path) -> None:
    """With the log checkpointed off the commit path, SQLite restarts it from the top: a second
    burst of writes reuses the file instead of growing it (it would double otherwise: the
    commits' own threshold, 1,000 pages, is not reached by either burst)."""
    path = tmp_path / "wal.db"
    with Store(f"sqlite:///{path}") as store:
        run = new_run(store)
        wal = Path(f"{path}-wal")
        snapshot = {"rendered_user_prompt": "x" * 3000}

        def burst(start: int) -> None:
            for i in range(start, start + 50):
                (claim,) = store.runs.nodes.write_one([Claim(run.id, f"n{i}", 1, "eng")])
                finish = Finish(run.id, claim.id, "eng", NodeStatus.COMPLETED, {"i": i}, snapshot)
                assert store.runs.nodes.write_one([finish]) == [True]

        burst(0)
        first = wal.stat().st_size
        time.sleep(0.5)  # a few checkpoint rounds
        burst(50)
        assert 100 * 4096 < first < 1000 * 4096, "the burst should stay under the commits' own threshold"
        assert wal.stat().st_size <= first * 1.2


def test_a_store_dropped_without_close_stops_its_checkpoint_thread(tmp_path: Path) -> None:
    import gc
    import threading

    def checkpointers() -> int:
        return sum(1 for t in threading.enumerate() if t.name == "plait-wal-checkpoint")

    before = checkpointers()
    store = Store(f"sqlite:///{tmp_path / 'dropped.db'}")
    assert checkpointers() == before + 1
    del store
    gc.collect()
    deadline = time.monotonic() + 2
    while checkpointers() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert checkpointers() <= before  # other dropped stores may have stopped theirs too


def test_a_claim_is_the_record_read_back_and_its_id_a_random_uuid(store: Store) -> None:
    """The record a claim returns is built without reading the row back (`records.fresh_claim`,
    its id by `db.new_id`): it must be the very record a read gives."""
    import uuid

    run = new_run(store)
    claimed = store.runs.nodes.write_one([Claim(run.id, "a", 1, "eng"), Claim(run.id, "b", 2, "eng")])
    assert claimed == [by_node(store, run.id)["a"], by_node(store, run.id)["b"]]
    ids = [uuid.UUID(record.id) for record in claimed]
    assert [(i.version, i.variant, str(i)) for i in ids] == [(4, uuid.RFC_4122, r.id) for r in claimed]
    assert ids[0] != ids[1]
