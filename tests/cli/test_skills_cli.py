"""`plait skills`: a skill file added, listed, shown, updated to a second version, exported and
read back, deleted; a graph naming it imported and run; and a skill written in Markdown imported
through the scripted designer: fixed in its second round and stored, or refused with the last
problems and nothing stored. Real `plait` processes, SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.store import Store
from tests.plait_cli import run_plait

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "skills" / "summarize.yaml"
NONE_YET = r"Problems the compiler found in the last proposal \(fix them\):\n\(none\)"
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
NOTES = {"type": "object", "properties": {"notes": {"type": "string"}}, "required": ["notes"]}
FIRST_DRAFT = [
    {"op": "set_graph", "field": "input_schema", "value": NOTES},
    {"op": "add_schema", "id": "text", "schema": TEXT},
    {"op": "add_node", "id": "write", "type": "LLM_CALL", "fields": {"system_prompt": "Write release notes."}},
    {"op": "connect", "from": "write", "to": "END", "schema_id": "text"},
]


def _rule(match: str, operations: list[Any]) -> dict[str, Any]:
    return {"node": "propose", "match": match, "output": {"reply": "ok", "operations": operations, "questions": []}}


RULES = [
    _rule(rf"(?s)Turn the skill 'release_notes'.*{NONE_YET}", FIRST_DRAFT),  # no prompt: a config error
    _rule(
        r"(?s)Turn the skill 'release_notes'.*config/",
        [{"op": "set_field", "node": "write", "fields": {"user_prompt_tpl": "Notes: {{ input.notes }}"}}],
    ),
    _rule(rf"(?s)Turn the skill 'hopeless'.*{NONE_YET}", FIRST_DRAFT),
    _rule(  # every repair leaves the node without its prompt
        r"(?s)Turn the skill 'hopeless'.*config/",
        [{"op": "set_field", "node": "write", "fields": {"system_prompt": "Still no prompt."}}],
    ),
    {"node": "__sum__key_points", "output": {"points": ["a", "b"]}},
    {"node": "__sum__condense", "output": {"summary": "short"}},
]
MARKDOWN = """---
name: {name}
description: Write release notes from a list of changes.
---
# Release notes

Read the notes of the changes and write release notes for users.
"""
USER = """
plait: 1
id: digest
input_schema: {type: object, properties: {doc: {type: string}}, required: [doc]}
schemas:
  - {id: summary, version: 1.0.0, schema: {type: object, properties: {summary: {type: string}}, required: [summary]}}
nodes:
  - {id: sum, type: SKILL, skill: summarize, inputs: {document: "{{ input.doc }}", max_words: 50}}
edges:
  - {source: sum, target: END, schema_id: summary}
"""


@pytest.fixture
def folder(tmp_path: Path, db_url: str) -> Path:
    (tmp_path / "rules.json").write_text(json.dumps({"responses": RULES}))
    (tmp_path / "summarize.yaml").write_text(EXAMPLE.read_text())
    (tmp_path / "digest.yaml").write_text(USER)
    (tmp_path / "db").write_text(db_url)
    return tmp_path


def plait(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLAIT_DB": (folder / "db").read_text()}
    return run_plait(*args, cwd=folder, env=env, timeout=120)


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    return done


def test_a_skill_is_added_listed_shown_updated_exported_used_and_deleted(folder: Path) -> None:
    added = json.loads(ok(plait(folder, "skills", "add", "summarize.yaml", "--tags", "text,short", "--json")).stdout)
    assert (added["name"], added["version"], added["tags"]) == ("summarize", 1, ["text", "short"])
    taken = plait(folder, "skills", "add", "summarize.yaml")
    assert taken.returncode == 2
    assert "exists already" in taken.stderr
    assert "plait skills update NAME FILE" in taken.stderr
    table = ok(plait(folder, "skills", "list")).stdout
    assert "summarize" in table
    assert "text, short" in table
    assert json.loads(ok(plait(folder, "skills", "list", "--tag", "nope", "--json")).stdout) == []

    ok(plait(folder, "run", "digest.yaml", "-i", "doc=A long text.", "--llm", "scripted:rules.json"))
    exported = ok(plait(folder, "skills", "export", "summarize")).stdout
    data = yaml.safe_load(exported)
    data["nodes"][1]["system_prompt"] = "You write very short summaries."
    (folder / "v2.yaml").write_text(yaml.safe_dump(data))
    second = json.loads(
        ok(plait(folder, "skills", "update", "summarize", "v2.yaml", "--note", "shorter", "--json")).stdout
    )
    assert [v["version"] for v in second["versions"]] == [1, 2]
    shown = ok(plait(folder, "skills", "show", "summarize@1")).stdout
    assert shown.startswith("summarize@1")
    assert "max_words = 120" in shown
    assert "input.text <- document" in shown
    assert "shorter" in shown
    ok(plait(folder, "skills", "export", "summarize@1", "-o", "v1.yaml"))
    assert yaml.safe_load((folder / "v1.yaml").read_text())["nodes"][1]["system_prompt"] == "You write summaries."

    with Store((folder / "db").read_text()) as store:
        run = store.runs.list(limit=10)[0]
        assert run.status == "completed"
        nodes = [n.id for n in store.graphs.get("digest", run.graph_version).graph.nodes]
        assert nodes == ["__sum__key_points", "__sum__condense"]
    ok(plait(folder, "skills", "delete", "summarize"))
    assert json.loads(ok(plait(folder, "skills", "list", "--json")).stdout) == []
    gone = plait(folder, "validate", "digest.yaml")
    assert gone.returncode == 2
    assert "unknown_skill" in gone.stdout + gone.stderr


def test_bad_parameters_are_compile_errors_in_validate(folder: Path) -> None:
    ok(plait(folder, "skills", "add", "summarize.yaml"))
    (folder / "bad.yaml").write_text(USER.replace("max_words: 50", "max_words: 5, colour: red"))
    bad = plait(folder, "validate", "bad.yaml")
    assert bad.returncode == 2
    out = bad.stdout + bad.stderr
    assert "unknown_skill_parameter" in out
    assert "bad_skill_parameter" in out
    ok(plait(folder, "validate", "digest.yaml"))


def test_a_markdown_skill_is_fixed_in_a_second_round_and_stored(folder: Path) -> None:
    (folder / "SKILL.md").write_text(MARKDOWN.format(name="release_notes"))
    done = ok(plait(folder, "skills", "import", "SKILL.md", "--llm", "scripted:rules.json", "--json"))
    stored = json.loads(done.stdout)
    assert (stored["name"], stored["version"]) == ("release_notes", 1)
    assert stored["parameters"] == [{"name": "notes", "schema": {"type": "string"}}]
    assert stored["description"] == "Write release notes from a list of changes."
    [node] = stored["graph"]["nodes"]
    assert node["user_prompt_tpl"] == "Notes: {{ input.notes }}"
    assert "imported from prose in 2 rounds" in stored["versions"][0]["note"]


def test_a_model_that_never_compiles_stores_nothing_and_says_why(folder: Path) -> None:
    (folder / "SKILL.md").write_text(MARKDOWN.format(name="hopeless"))
    failed = plait(folder, "skills", "import", "SKILL.md", "--llm", "scripted:rules.json")
    assert failed.returncode == 2
    assert "no skill graph that compiles in 3 rounds" in failed.stderr
    assert "round 3, fixing 1 problems" in failed.stderr
    assert "[node 'write']" in failed.stderr  # the last problems, as the compiler words them
    assert json.loads(ok(plait(folder, "skills", "list", "--json")).stdout) == []
