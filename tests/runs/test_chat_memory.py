"""A long chat remembers instead of replaying (scripted models, the Python client): once its turns
pass the designer's history budget, the turns leaving the verbatim window go to one recorded
extraction run and its facts are remembered with the messages and node run they came from; the
designer is then shown the latest turns, a bounded summary and the recalled facts, and its run
input records which; a corrected fact, or a new value the person says later, replaces the old one
in what the designer is shown; what the facts leave of their share goes to the summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plait import Client
from plait.llm.tokens import EstimateCounter
from plait.runs._chat_memory import COMPRESS_AT, HISTORY_TOKENS, SPLIT, conversation_shown, scope_of
from plait.store import Store
from plait.store.memory import FactStatus

pytestmark = pytest.mark.usefixtures("embedder_installed")
FACTS = [
    {"subject": "Ada", "predicate": "lives in", "object": "Paris", "text": "Ada lives in Paris."},
    {"subject": "Ada", "predicate": "works at", "object": "the Observatory", "text": "Ada works at the Observatory."},
]
RULES: list[dict[str, Any]] = [
    {"node": "extract", "match": "person: Ada lives in Paris and works", "output": {"facts": FACTS}},
    {"node": "extract", "output": {"facts": []}},  # later turns state nothing new
    {"node": "propose", "output": {"reply": "Noted.", "operations": [], "questions": []}},
]


def test_a_long_chat_remembers_facts_and_shows_them_instead_of_old_turns(tmp_path: Path) -> None:
    script = tmp_path / "models.json"
    script.write_text(json.dumps({"responses": RULES}))
    filler = "I keep notes about my week and the people in it, as one does when a week is long. " * 3
    with Client(tmp_path / "p.db", llm=f"scripted:{script}") as client:
        session = client.chat.open("Notes").id
        client.chat.send(session, "Ada lives in Paris and works at the Observatory. " + filler)
        turns = 1
        while not client._client.store.memory.facts(scope_of(session)):
            client.chat.send(session, f"Turn {turns}: {filler}")
            turns += 1
            assert turns < 40, "the history never passed its budget"
        store = client._client.store
        facts = store.memory.facts(scope_of(session))
        assert [f.object for f in facts] == ["paris", "the observatory"]
        [extraction] = store.runs.list(graph="plait.memory_extract")
        assert facts[0].source["run_id"] == extraction.id
        assert facts[0].source["node_run_id"] == store.runs.node_runs(extraction.id)[0].id
        assert 1 in facts[0].source["messages"]  # the first message, which stated them
        assert "Ada lives in Paris" in extraction.input["turns"]
        assert store.chat.get_session(session).memory_seq >= 1

        client.chat.send(session, "Where does Ada live?")
        last = store.runs.list(graph="plait.designer", limit=1)[0].input
        items = last["conversation_items"]
        assert facts[0].id in items["facts"]
        assert items["summarised"]  # older turns, by their first sentence
        assert 1 not in items["turns"]  # the first turn is not replayed verbatim
        assert "Ada lives in Paris." in last["conversation"]
        size = len(last["conversation"]) / 4
        assert size <= HISTORY_TOKENS * 1.05  # within the budget (estimated tokens)
        assert size > COMPRESS_AT * HISTORY_TOKENS * 0.3

        moved = client.memory.correct(facts[0].id, {"object": "Lyon", "text": "Ada moved to Lyon."})
        client.chat.send(session, "Where does Ada live now?")
        latest = store.runs.list(graph="plait.designer", limit=1)[0].input
        assert moved.id in latest["conversation_items"]["facts"]
        assert facts[0].id not in latest["conversation_items"]["facts"]
        assert "Ada moved to Lyon." in latest["conversation"]
        assert "Ada lives in Paris." not in latest["conversation"]


def test_a_value_said_later_replaces_the_remembered_one_in_what_the_designer_is_shown(tmp_path: Path) -> None:
    lyon = {"subject": "ada", "predicate": "lives in", "object": "Lyon", "text": "Ada moved to Lyon."}
    said_again = {"node": "extract", "match": "person: Ada moved to Lyon", "output": {"facts": [lyon]}}
    rules = [RULES[0], said_again, *RULES[1:]]
    script = tmp_path / "models.json"
    script.write_text(json.dumps({"responses": rules}))
    filler = "I keep notes about my week and the people in it, as one does when a week is long. " * 3
    with Client(tmp_path / "p.db", llm=f"scripted:{script}") as client:
        store, session = client._client.store, client.chat.open("Notes").id
        client.chat.send(session, "Ada lives in Paris and works at the Observatory. " + filler)
        said_it = False
        for turn in range(60):
            objects = {f.object for f in store.memory.facts(scope_of(session))}
            if "lyon" in objects:
                break
            if "paris" in objects and not said_it:
                client.chat.send(session, "Ada moved to Lyon last month. " + filler)
                said_it = True
            else:
                client.chat.send(session, f"Turn {turn}: {filler}")
        history = {f.object: f for f in store.memory.facts(scope_of(session), history=True)}
        paris, moved = history["paris"], history["lyon"]
        assert (paris.status, paris.superseded_by, moved.supersedes) == (FactStatus.SUPERSEDED, moved.id, paris.id)
        extraction = store.runs.get(moved.source["run_id"])
        assert "ada | lives in | paris" in extraction.input["known"]  # shown by subject and predicate
        client.chat.send(session, "Where does Ada live now?")
        latest = store.runs.list(graph="plait.designer", limit=1)[0].input
        assert moved.id in latest["conversation_items"]["facts"]
        assert paris.id not in latest["conversation_items"]["facts"]
        assert "Ada moved to Lyon." in latest["conversation"]


def test_what_the_facts_leave_of_their_share_goes_to_the_summary(store: Store) -> None:
    session = store.chat.create_session("Notes")
    for turn in range(40):
        store.chat.add_message(session.id, "user", "text", {"text": f"Turn {turn} asks for a summariser node. " * 3})
    messages = store.chat.messages(session.id)
    shown = conversation_shown(store, store.chat.get_session(session.id) or session, messages, "anything?")
    counter = EstimateCounter()
    summary = shown.text.split("Remembered facts:")[0]
    assert shown.facts == []  # nothing remembered yet
    assert counter.count(summary) > SPLIT[1] * HISTORY_TOKENS * 1.5
    assert counter.count(shown.text) <= HISTORY_TOKENS * 1.02


def test_past_a_thousand_messages_the_newest_turns_are_the_ones_read(store: Store) -> None:
    """The turns leaving the verbatim window are read from the conversation's end, however long
    it is: reading its first thousand messages would extract nothing new ever again."""
    from plait.runs._chat_memory import _leaving

    session = store.chat.create_session("Long")
    for n in range(1, 1051):
        store.chat.add_message(session.id, "user", "text", {"text": f"Message {n} says something worth keeping."})
    store.chat.set_memory_seq(session.id, 1000)
    due = _leaving(store, session.id)
    assert due is not None
    extraction_input, seqs = due
    assert seqs
    assert min(seqs) > 1000
    assert "Message 1001 says" in extraction_input["turns"]
