"""Stored skills through the use cases every surface calls: stored only once they compile and name
no file, exported and read back, expanded in uploads at the newest version when compiled (the
stored graph keeps that version after a newer one is stored), and a cycle made by an update
refused. SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.compile import GraphInvalid
from plait.compile.source import parse_source
from plait.evolve.skills import SkillDraft, SkillError, add_skill, draft_of, export_skill, update_skill
from plait.evolve.upload import UploadMode, save_upload
from plait.store import Store

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "skills" / "summarize.yaml"
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def shout(prompt: str) -> dict[str, Any]:
    return {
        "plait": 1,
        "id": "shout",
        "schemas": [{"id": "text", "schema": TEXT}],
        "nodes": [{"id": "up", "type": "LLM_CALL", "user_prompt_tpl": prompt}],
        "edges": [{"source": "up", "target": "END", "schema_id": "text"}],
    }


def prompt(node: object) -> str | None:
    return getattr(node, "user_prompt_tpl", None)


def uses(skill: str, graph_id: str = "user", node: str = "s") -> dict[str, Any]:
    return {
        "plait": 1,
        "id": graph_id,
        "schemas": [{"id": "text", "schema": TEXT}],
        "nodes": [{"id": node, "type": "SKILL", "skill": skill, "inputs": {"text": "{{ input.t }}"}}],
        "edges": [{"source": node, "target": "END", "schema_id": "text"}],
    }


def test_the_example_skill_file_is_stored_and_exported_as_it_reads(store: Store) -> None:
    stored = add_skill(store, draft_of(parse_source(EXAMPLE.read_text())), by="t")
    assert (stored.ref, stored.category, stored.tags) == ("summarize@1", "text", ["summary"])
    assert [p["name"] for p in stored.parameters] == ["document", "max_words"]
    assert stored.input_mapping == {"text": "document"}
    exported = export_skill(stored)
    again = draft_of(parse_source(exported))
    assert (again.name, again.parameters, again.input_mapping) == ("summarize", stored.parameters, {"text": "document"})
    assert again.document == stored.document
    updated = update_skill(store, "summarize", again, by="t", note="same again")
    assert (updated.version, updated.versions[-1].note) == (2, "same again")


def test_a_skill_is_stored_only_when_it_compiles_and_names_no_file(store: Store) -> None:
    with pytest.raises(GraphInvalid) as broken:
        add_skill(store, SkillDraft(shout("{{ nowhere.x }}")), by="t")
    assert [d.code for d in broken.value.diagnostics] == ["bad_template_path"]
    with_file = shout("x")
    with_file["nodes"].append({"id": "f", "type": "SKILL", "skill": "skills/other.yaml"})
    with pytest.raises(GraphInvalid) as named:
        add_skill(store, SkillDraft(with_file), by="t")
    assert [d.code for d in named.value.diagnostics] == ["file_in_skill"]
    with pytest.raises(SkillError) as bad:
        add_skill(
            store,
            SkillDraft(shout("x"), parameters=[{"name": "n", "schema": {"type": "integer"}, "default": "x"}]),
            by="t",
        )
    assert "its default breaks its schema" in bad.value.details[0]
    with pytest.raises(SkillError, match="is not a skill name"):
        add_skill(store, SkillDraft(shout("x"), name="no.dots"), by="t")
    assert store.skills.list() == []


def test_an_upload_expands_the_newest_version_and_keeps_it(store: Store) -> None:
    add_skill(store, SkillDraft(shout("Shout {{ input.text }}")), by="t")
    first = save_upload(store, uses("shout"), mode=UploadMode.CREATE).stored
    [node] = first.graph.nodes
    assert (node.id, node.skill_scope and node.skill_scope.skill) == ("__s__up", "shout@1")
    update_skill(store, "shout", SkillDraft(shout("YELL {{ input.text }}")), by="t")
    kept = store.graphs.get("user", first.version)
    assert prompt(kept.graph.nodes[0]) == "Shout {{ input.text }}"  # a new skill version changes no stored graph
    again = save_upload(store, uses("shout"), mode=UploadMode.IMPORT).stored
    assert (again.version, prompt(again.graph.nodes[0])) == (2, "YELL {{ input.text }}")
    pinned = save_upload(store, uses("shout@1", "pinned"), mode=UploadMode.CREATE).stored
    assert prompt(pinned.graph.nodes[0]) == "Shout {{ input.text }}"


def test_an_update_that_would_make_a_cycle_is_refused(store: Store) -> None:
    add_skill(store, SkillDraft(shout("x"), name="b"), by="t")
    add_skill(store, SkillDraft(uses("b", "a", "inner"), name="a"), by="t")
    with pytest.raises(GraphInvalid) as cycle:
        update_skill(store, "b", SkillDraft(uses("a", "b", "inner")), by="t")
    messages = [d.message for d in cycle.value.diagnostics]
    assert "skill includes itself: b@new → a@1 → b@1" in messages, messages
    assert store.skills.get("b").version == 1


def test_a_skill_file_may_not_carry_unknown_fields_in_its_block() -> None:
    text = yaml.safe_dump({**shout("x"), "skill": {"name": "shout", "colour": "red"}})
    with pytest.raises(SkillError, match="unknown fields: colour"):
        draft_of(parse_source(text))
