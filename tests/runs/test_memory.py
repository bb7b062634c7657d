"""A chat's memory, on SQLite and PostgreSQL: facts kept with where they came from and their names
normalised; recalled by the question's words and meaning, plus one hop through shared names; a
correction supersedes a fact (kept in its history, never recalled again) and a retraction marks
one, and neither can act on a fact that is no longer active."""

from __future__ import annotations

import pytest

from plait.runs.memory import correct, normalised_name, recall, remember, retract
from plait.store import Store, StoreError
from plait.store.memory import FactStatus

pytestmark = pytest.mark.usefixtures("embedder_installed")
SCOPE = "chat:s1"
SOURCE = {"messages": ["m1", "m2"], "run_id": "r1", "node_run_id": "n1"}


def planted(store: Store) -> dict[str, str]:
    said = [
        ("Ada", "lives in", "Paris", "Ada lives in Paris."),
        ("Ada", "works at", "the Observatory", "Ada works at the Observatory."),
        ("  the Observatory. ", "is in", "Meudon", "The Observatory is in Meudon."),
        ("Grace", "owns", "a sailing boat", "Grace owns a sailing boat."),
        ("Grace", "prefers", "tea", "Grace prefers tea to coffee."),
    ]
    facts = remember(store, SCOPE, [{"subject": s, "predicate": p, "object": o, "text": t} for s, p, o, t in said],
                     source=SOURCE, by="extractor")  # fmt: skip
    return {f.text: f.id for f in facts}


def test_facts_keep_their_source_and_normalised_names(store: Store) -> None:
    ids = planted(store)
    fact = store.memory.get(ids["The Observatory is in Meudon."])
    assert fact.subject == "the observatory"
    assert fact.entities == ("the observatory", "meudon")
    assert fact.source == SOURCE
    assert fact.created_by == "extractor"
    assert normalised_name("  Lyon. ") == normalised_name("LYON") == "lyon"
    assert store.memory.scopes() == [(SCOPE, 5)]


def test_recall_finds_by_words_and_meaning_and_one_hop_through_shared_names(store: Store) -> None:
    ids = planted(store)
    by_words = recall(store, SCOPE, "where does Ada live?")
    assert by_words[0].fact.id == ids["Ada lives in Paris."]
    by_meaning = recall(store, SCOPE, "which hot drink does she like?", k=1)
    assert by_meaning[0].fact.id == ids["Grace prefers tea to coffee."]
    hopped = {r.fact.id for r in recall(store, SCOPE, "Ada works", k=1) if r.via == "hop"}
    assert ids["The Observatory is in Meudon."] in hopped  # shares "the observatory" with the hit
    assert recall(store, "chat:other", "where does Ada live?") == []


def test_a_correction_supersedes_and_a_superseded_fact_is_never_recalled(store: Store) -> None:
    ids = planted(store)
    old = ids["Ada lives in Paris."]
    moved = correct(store, old, {"object": "Lyon", "text": "Ada moved to Lyon."}, by="ada", note="she moved")
    assert (moved.subject, moved.object, moved.supersedes, moved.status) == ("ada", "lyon", old, FactStatus.ACTIVE)
    assert store.memory.get(old).status == FactStatus.SUPERSEDED
    assert store.memory.get(old).superseded_by == moved.id
    recalled = [r.fact.id for r in recall(store, SCOPE, "where does Ada live now? Paris or Lyon?", k=8)]
    assert moved.id in recalled
    assert old not in recalled
    assert [f.id for f in store.memory.history(old)] == [old, moved.id]
    assert [f.id for f in store.memory.history(moved.id)] == [old, moved.id]
    with pytest.raises(StoreError, match="superseded by"):
        correct(store, old, {"object": "Nice"}, by="ada")
    gone = retract(store, ids["Grace owns a sailing boat."], by="grace", note="sold it")
    assert gone.status == FactStatus.RETRACTED
    assert gone.source["retracted_by"] == "grace"
    assert ids["Grace owns a sailing boat."] not in [r.fact.id for r in recall(store, SCOPE, "Grace boat", k=8)]
    with pytest.raises(StoreError, match="only an active fact"):
        retract(store, gone.id, by="grace")
    everything = store.memory.facts(SCOPE, history=True)
    assert len(everything) == 6  # nothing deleted: five planted, one correction


def test_a_fact_held_already_is_not_stored_twice(store: Store) -> None:
    planted(store)
    again = remember(store, SCOPE, [{"subject": "ADA", "predicate": "Lives in", "object": "Paris."}], source={}, by="x")
    assert again == []
    assert len(store.memory.facts(SCOPE)) == 5
