"""A chat's memory, on SQLite and PostgreSQL: facts kept with where they came from and their names
normalised; recalled by the question's words and meaning, plus one hop through shared names; a
correction supersedes a fact (kept in its history, never recalled again) and a retraction marks
one, and neither can act on a fact that is no longer active."""

from __future__ import annotations

import pytest

from plait.runs.memory import _by_words, correct, normalised_name, recall, remember, retract
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


def test_a_new_value_for_a_subject_and_predicate_supersedes_the_held_one_with_its_source(store: Store) -> None:
    ids = planted(store)
    paris = ids["Ada lives in Paris."]
    moved_source = {"messages": [40], "run_id": "r2", "node_run_id": "n2"}
    [lyon] = remember(store, SCOPE, [{"subject": "ada", "predicate": "Lives  in", "object": "Lyon",
                                      "text": "Ada moved to Lyon."}], source=moved_source, by="extractor")  # fmt: skip
    assert (lyon.status, lyon.supersedes, lyon.source) == (FactStatus.ACTIVE, paris, moved_source)
    assert (store.memory.get(paris).status, store.memory.get(paris).superseded_by) == (FactStatus.SUPERSEDED, lyon.id)
    assert [f.id for f in store.memory.history(lyon.id)] == [paris, lyon.id]
    recalled = [r.fact.id for r in recall(store, SCOPE, "where does Ada live?", then=10)]
    assert lyon.id in recalled
    assert paris not in recalled
    # several objects at once, when the fact says so; the other predicates of the subject stay
    boats = [{"subject": "Grace", "predicate": "owns", "object": "a car", "one_of_many": True}]
    remember(store, SCOPE, boats, source={}, by="extractor")
    assert {f.object for f in store.memory.facts(SCOPE) if f.subject == "grace"} == {"a sailing boat", "a car", "tea"}
    assert store.memory.get(ids["Ada works at the Observatory."]).status == FactStatus.ACTIVE


def test_within_one_extraction_the_later_value_wins_and_older_news_stays_history(store: Store) -> None:
    said = [
        {"subject": "the API", "predicate": "listens on port", "object": "8443", "valid_from": "2026-01-10"},
        {"subject": "the API", "predicate": "listens on port", "object": "9443", "valid_from": "2026-03-01"},
    ]
    first, second = remember(store, SCOPE, said, source={"run_id": "r1"}, by="extractor")
    assert store.memory.get(first.id).superseded_by == second.id
    assert (second.valid_from or 0) > (first.valid_from or 0) > 0
    # a value that was true before the one held (valid_from) does not replace it
    [old] = remember(store, SCOPE, [{"subject": "The API.", "predicate": "listens on port", "object": "7443",
                                     "valid_from": "2025-12"}], source={"run_id": "r2"}, by="extractor")  # fmt: skip
    assert (old.status, old.superseded_by) == (FactStatus.SUPERSEDED, second.id)
    assert [f.object for f in store.memory.facts(SCOPE)] == ["9443"]


def test_recall_ranks_by_words_that_carry_meaning_and_hops_only_through_uncommon_names(store: Store) -> None:
    about_me = ["lives in Lyon", "works at Corvid", "drives a Volvo", "speaks Finnish", "is allergic to sesame",
                "keeps the UTC-5 time zone", "takes coffee black"]  # fmt: skip
    said = [{"subject": "the person", "predicate": p.rsplit(" ", 1)[0], "object": p.rsplit(" ", 1)[1],
             "text": f"The person {p}."} for p in about_me]  # fmt: skip
    said.append({"subject": "Corvid", "predicate": "is in", "object": "Ghent", "text": "Corvid is in Ghent."})
    remember(store, SCOPE, said, source={}, by="extractor")
    facts = store.memory.facts(SCOPE)
    assert _by_words(facts, "What is the one that I do?") == []  # only function words in common
    hits = recall(store, SCOPE, "which company employs me?", k=1)
    assert hits[0].fact.object == "corvid"
    hopped = [r.fact.object for r in hits if r.via == "hop"]
    assert hopped == ["ghent"]  # through "corvid" (two facts), not "the person" (seven)
    everything = recall(store, SCOPE, "which company employs me?", k=1, then=20)
    assert len(everything) == len(facts)
    assert [r.via for r in everything[:2]] == ["search", "hop"]
