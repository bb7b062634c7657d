"""Run and node run ids by unique prefix, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from plait.store import NotFoundError, Store
from plait.store.prefix import AmbiguousIdError
from tests.store.store_helpers import new_run


def test_a_full_id_or_a_unique_prefix_names_a_run(store: Store) -> None:
    run = new_run(store)
    assert store.runs.resolve(run.id) == run.id
    assert store.runs.resolve(run.id[:5]) == run.id
    assert store.runs.resolve(run.id[:5].upper()) == run.id
    with pytest.raises(NotFoundError, match="at least 4 characters"):
        store.runs.resolve(run.id[:3])
    with pytest.raises(NotFoundError, match="no run '%%%%'"):
        store.runs.resolve("%%%%")  # not an id's characters: never used as a LIKE pattern
    with pytest.raises(NotFoundError, match="no run 'ffffffff'"):
        store.runs.resolve("ffffffff" if not run.id.startswith("ffffffff") else "eeeeeeee")


def test_a_prefix_of_several_runs_is_ambiguous_and_lists_them(store: Store) -> None:
    runs = [new_run(store).id for _ in range(3)]
    with store.db.begin() as conn:  # pending runs without node runs: their ids can be chosen
        for n, run_id in enumerate(runs):
            conn.exec_driver_sql(
                "UPDATE prompt_graph_run SET id = %(new)s WHERE id = %(old)s"
                if store.db.dialect.name == "postgresql"
                else "UPDATE prompt_graph_run SET id = :new WHERE id = :old",
                {"new": f"beef{n}000-0000-4000-8000-00000000000{n}", "old": run_id},
            )
    with pytest.raises(AmbiguousIdError, match="matches 3 runs") as info:
        store.runs.resolve("beef")
    assert sorted(c[0] for c in info.value.candidates) == [
        f"beef{n}000-0000-4000-8000-00000000000{n}" for n in range(3)
    ]
    assert store.runs.resolve("beef1") == "beef1000-0000-4000-8000-000000000001"


def test_a_unique_prefix_names_a_node_run(store: Store) -> None:
    run = new_run(store)
    claim = store.runs.claim_node(run.id, "classify", 1, "me")
    assert claim is not None
    assert store.runs.resolve_node_run(claim.id[:6]) == claim.id
    with pytest.raises(NotFoundError, match="no node run"):
        store.runs.resolve_node_run("0000ffff-dead")
