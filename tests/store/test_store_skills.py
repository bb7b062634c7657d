"""Stored skills in the store: created at version 1, new versions numbered after the newest, read
at a version or the newest, listed by tag, category and text, deleted with their versions; a
taken name refused. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from plait.store import Store, StoreError
from plait.store.errors import NotFoundError
from plait.store.skills import SkillContent

DOC = {"plait": 1, "id": "shout", "nodes": [{"id": "up", "type": "LLM_CALL", "user_prompt_tpl": "x"}], "edges": []}
PARAMS = [{"name": "text", "schema": {"type": "string"}}]


def test_a_skill_is_created_versioned_read_listed_and_deleted(store: Store) -> None:
    first = store.skills.create(
        "shout", SkillContent(DOC, PARAMS, {"words": "text"}, created_by="t", note="first"),
        description="Says it loud", category="text", tags=["loud", "fun"],
    )  # fmt: skip
    assert (first.version, first.parameters, first.input_mapping) == (1, PARAMS, {"words": "text"})
    assert [(v.version, v.created_by, v.note) for v in first.versions] == [(1, "t", "first")]
    changed = {**DOC, "name": "Shout louder"}
    second = store.skills.add_version("shout", SkillContent(changed, [], created_by="u"), tags=["loud"])
    assert (second.version, second.document["name"], second.tags, second.category) == (
        2,
        "Shout louder",
        ["loud"],
        "text",
    )
    assert [v.version for v in second.versions] == [1, 2]
    assert store.skills.get("shout", 1).document == DOC  # a version never changes
    assert store.skills.get("shout").version == 2
    store.skills.create("whisper", SkillContent(DOC), category="quiet")
    assert [s.name for s in store.skills.list()] == ["shout", "whisper"]
    assert [(s.name, s.version) for s in store.skills.list(tag="loud")] == [("shout", 2)]
    assert [s.name for s in store.skills.list(category="quiet")] == ["whisper"]
    assert [s.name for s in store.skills.list(q="LOUD")] == ["shout"]  # in the description, any case
    store.skills.delete("shout")
    assert store.skills.find("shout") is None
    assert [s.name for s in store.skills.list()] == ["whisper"]
    again = store.skills.create("shout", SkillContent(DOC))  # a deleted name is free again
    assert again.version == 1


def test_refusals_name_what_is_wrong(store: Store) -> None:
    store.skills.create("shout", SkillContent(DOC))
    with pytest.raises(StoreError, match="a skill named 'shout' exists already"):
        store.skills.create("shout", SkillContent(DOC))
    with pytest.raises(NotFoundError, match="has no version 7"):
        store.skills.get("shout", 7)
    with pytest.raises(NotFoundError, match="no stored skill 'nope'"):
        store.skills.get("nope")
    with pytest.raises(NotFoundError):
        store.skills.add_version("nope", SkillContent(DOC))
    with pytest.raises(NotFoundError):
        store.skills.delete("nope")
