"""A long chat remembers instead of replaying (scripted models, the Python client): once its turns
pass the designer's history budget, the turns leaving the verbatim window go to one recorded
extraction run and its facts are remembered with the messages and node run they came from; the
designer is then shown the latest turns, a bounded summary and the recalled facts, and its run
input records which; a corrected fact replaces the old one in what the designer is shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plait import Client
from plait.runs._chat_memory import COMPRESS_AT, HISTORY_TOKENS, scope_of

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
