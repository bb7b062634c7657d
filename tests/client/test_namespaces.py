"""`client.templates`, `client.schedules` and `client.tokens`: what `plait templates`,
`plait schedules` and `plait token` do, over the same use cases and the same store, with the
same refusals; blocking and async."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from plait.cli.app import app
from plait.client import AsyncClient, Client
from plait.client._namespaces import AsyncTemplates
from plait.compile.builder import GraphBuilder
from plait.errors import PlaitError
from plait.runs.schedules import ScheduleError, Scheduler
from plait.runs.template_edits import TemplateRefused
from plait.store import NotFoundError, StoreError

ASKS = """async function main() {
  const t = await getVar("input.topic");
  console.warn("topic", t);
  return `ask ${t}`;
}
"""
ANSWERS = {"responses": [{"match": "JSON", "output": {"title": "Birds"}}, {"text": "Birds fly south."}]}


def _graph() -> GraphBuilder:
    g = GraphBuilder("scheduled", input_schema={"type": "object", "required": ["topic"],
                                                "properties": {"topic": {"type": "string"}}})  # fmt: skip
    return g.transform("shout", "input.topic.toUpperCase()")


def _cli_json(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_templates_are_created_changed_and_deleted_as_the_cli_stores_them(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Client(db) as client:
        mine = client.templates.create("mine", ASKS, name="Ask", category="asking", description="asks")
        assert (mine.source_type, mine.based_on_template_id, mine.schema_target) == ("user", None, None)
        copy = client.templates.create("my_summary", base="plait.summary")
        summary = client.templates.get("plait.summary")
        assert (copy.script_code, copy.category, copy.name) == (summary.script_code, summary.category, summary.name)
        assert copy.based_on_template_id == "plait.summary"
        changed = client.templates.update("mine", script=ASKS.replace("ask", "tell"), name="Tell")
        assert (changed.name, changed.category) == ("Tell", "asking")
        assert "tell ${t}" in changed.script_code
        assert [t.id for t in client.templates.list(category="asking")] == ["mine"]
        assert "plait.summary" in {t.id for t in client.templates.list()}
        assert client.templates.delete("my_summary").deleted_at is not None
        assert "my_summary" not in {t.id for t in client.templates.list()}
        kept = client.templates.get("mine")
    assert _cli_json(db, "templates", "show", "mine") == kept.as_json()


def test_templates_refuse_what_the_cli_refuses(tmp_path: Path) -> None:
    with Client(tmp_path / "p.db") as client:
        with pytest.raises(TemplateRefused, match=r"the script does not parse: .* at line 2, column 1") as broken:
            client.templates.create("broken", "async function main( {\n")
        assert broken.value.kind == "invalid"
        client.templates.create("fine", ASKS)
        with pytest.raises(TemplateRefused, match="the script does not parse"):
            client.templates.update("fine", script="return 1 +;")
        assert client.templates.get("fine").script_code == ASKS  # the refused change stored nothing
        with pytest.raises(TemplateRefused, match="needs a script"):
            client.templates.create("empty")
        with pytest.raises(NotFoundError):
            client.templates.get("no.such.template")
        with pytest.raises(NotFoundError):
            client.templates.create("copy", base="no.such.template")
        with pytest.raises(StoreError, match="read-only"):
            client.templates.update("plait.summary", name="mine")
        assert "broken" not in {t.id for t in client.templates.list()}


def test_a_preview_runs_a_template_or_a_script_against_an_input(tmp_path: Path) -> None:
    with Client(tmp_path / "p.db") as client:
        shown = client.templates.preview("plait.summary", input={"text": "Birds fly south in winter."})
        assert shown.error is None
        assert shown.prompt is not None
        assert shown.prompt.startswith("Summarise the text below in two sentences.")
        assert "Birds fly south in winter." in shown.prompt
        asked = client.templates.preview(script=ASKS, input={"topic": "tea"})
        assert asked.prompt == "ask tea"
        assert [(e.type, e.args) for e in asked.events if e.type == "warning"] == [("warning", ["topic", "tea"])]
        failed = client.templates.preview(script=ASKS)  # no input: the script's getVar is rejected
        assert failed.prompt is None
        assert failed.error is not None
        with pytest.raises(PlaitError, match="one of them"):
            client.templates.preview("plait.summary", script=ASKS)
        with pytest.raises(PlaitError, match="go together"):
            client.templates.preview(script=ASKS, run_id="r1")
        with pytest.raises(NotFoundError):
            client.templates.preview(script=ASKS, run_id="no-such-run", node_id="n")


def test_run_sends_the_prompt_to_the_clients_model(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump(ANSWERS))
    with Client(tmp_path / "p.db", llm=f"scripted:{answers}") as client:
        seen: list[str] = []
        done = client.templates.run(script=ASKS, input={"topic": "birds"}, on_event=lambda kind, _: seen.append(kind))
        assert (done.failure, done.content) == (None, "Birds fly south.")
        assert done.script is not None
        assert done.script.prompt == "ask birds"
        assert seen[0] == "warning"
        assert "prompt" in seen
        assert "delta" in seen
        assert seen[-1] == "done"
        client.templates.create("titled", ASKS, schema_target="title")
        parsed = client.templates.run("titled", input={"topic": "JSON"})
        assert parsed.value == {"title": "Birds"}
        unparsed = client.templates.run("titled", input={"topic": "birds"})
        assert unparsed.failure is not None
        assert (unparsed.failure.layer, unparsed.failure.kind) == ("parse", "not_json")
        broken = client.templates.run(script="async function main() {\n  return 1 +;\n}\n")
        assert broken.failure is not None
        assert broken.failure.layer == "script"


def test_schedules_are_added_fired_paused_resumed_and_deleted(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Client(db) as client:
        made = client.schedules.add(_graph(), "*/5 * * * *", {"topic": "tea"}, catch_up="all", timezone="Europe/Paris")
        assert (made.cron, made.timezone, made.catch_up) == ("*/5 * * * *", "Europe/Paris", "all")
        assert (made.status, made.input) == ("active", {"topic": "tea"})
        assert [s.id for s in client.schedules.list()] == [made.id]
        assert client.schedules.get(made.id[:8]).firings == []
        fired = Scheduler(client.store, lambda _: None).tick(now=made.next_fire_at)
        shown = client.schedules.get(made.id)
        assert [run_id for _, run_id in shown.firings] == fired
        assert len(fired) == 1
        assert client.schedules.pause(made.id).status == "paused"
        assert client.schedules.resume(made.id).status == "active"
        assert client.schedules.delete(made.id).id == made.id
        assert client.schedules.list() == []
        again = client.schedules.add("scheduled", "@daily", {"topic": "x"})
        kept = client.schedules.get(again.id)
    assert _cli_json(db, "schedules", "show", again.id) == kept.as_json()


def test_schedules_refuse_what_the_cli_refuses(tmp_path: Path) -> None:
    with Client(tmp_path / "p.db") as client:
        with pytest.raises(ScheduleError, match="not a cron expression of five fields") as bad:
            client.schedules.add(_graph(), "*/61 * * *", {"topic": "tea"})
        assert bad.value.code == "schedule_invalid"
        with pytest.raises(ScheduleError, match="'Mars/Base' is not a time zone"):
            client.schedules.add(_graph(), "* * * * *", {"topic": "tea"}, timezone="Mars/Base")
        with pytest.raises(ScheduleError, match="catch_up 'some'"):
            client.schedules.add(_graph(), "* * * * *", {"topic": "tea"}, catch_up="some")
        with pytest.raises(PlaitError, match="does not match the graph's input_schema") as wrong:
            client.schedules.add(_graph(), "* * * * *", {"other": 1})
        assert wrong.value.hint is not None
        assert "-i key=value" not in wrong.value.hint
        for refused in (client.schedules.get, client.schedules.pause, client.schedules.resume, client.schedules.delete):
            with pytest.raises(NotFoundError):
                refused("no-such-schedule")
        assert client.schedules.list() == []


def test_a_token_is_shown_once_and_works_until_revoked(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Client(db) as client:
        info, token = client.tokens.create("ci")
        assert info.name == "ci"
        assert token.startswith("plait_")
        verified = client.store.tokens.verify(token)
        assert verified is not None
        assert verified.id == info.id
        assert [(t.id, t.name) for t in client.tokens.list()] == [(info.id, "ci")]
        with pytest.raises(StoreError, match="exists already"):
            client.tokens.create("ci")
        listed = _cli_json(db, "token", "list")
        assert [(t["id"], t["name"]) for t in listed] == [(info.id, "ci")]
        assert client.tokens.revoke("ci").id == info.id
        assert client.store.tokens.verify(token) is None
        with pytest.raises(NotFoundError):
            client.tokens.revoke("ci")
        assert client.tokens.list() == []


def test_the_async_namespaces_and_their_blocking_twins(tmp_path: Path) -> None:
    async def main() -> tuple[str, str, list[str]]:
        async with AsyncClient(tmp_path / "p.db") as client:
            made = await client.templates.create("mine", ASKS)
            created = await client.tokens.create("ci")
            return made.id, created.info.name, [t.name for t in await client.tokens.list()]

    assert asyncio.run(main()) == ("mine", "ci", ["ci"])
    with Client(tmp_path / "p.db") as client:
        assert client.templates.get("mine").script_code == ASKS  # the same store, read by the other twin
        assert client.templates.list.__doc__ == AsyncTemplates.list.__doc__
        assert type(client.templates).list.__qualname__ == "Templates.list"
        assert type(client).run.__qualname__ == "Client.run"
