"""LLM_CALL nodes whose prompt is a script (`prompt_script`): the prompt, the console events and
the host calls go into the node run's snapshot; a failing script fails the node with its
position; `plait validate` parses inline scripts; the dry run runs the script."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from plait.compile.compiler import compile_file
from plait.engine.runtime import Runtime
from plait.model.enums import RunStatus
from plait.model.graph import GraphDef
from plait.runs.dry_run import dry_run
from plait.store import Store
from tests.engine.test_checks import recorded
from tests.engine.test_engine import execute, graph_file, nodes_of, script

TOPIC = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}
SCRIPT = """
async function main() {
  const outline = await getVar("outline.text");
  const hint = await getSchemaHint("output");
  console.log("outline has", outline.length, "characters");
  return `Write a title for: ${outline}\\n${hint}`;
}"""


def scripted(tmp_path: Path, code: str = SCRIPT) -> str:
    return graph_file(
        tmp_path,
        [
            {"id": "outline", "type": "TRANSFORM", "transform_expr": "({text: 'birds in winter'})"},
            {"id": "title", "type": "LLM_CALL", "prompt_script": {"language": "js", "code": code}},
        ],
        [
            {"source": "outline", "target": "title", "schema_id": "text"},
            {"source": "title", "target": "END", "schema_id": "text"},
        ],
    )


def test_the_scripts_prompt_is_sent_and_recorded_with_its_events_and_host_calls(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"node": "title", "output": {"text": "Winter birds"}}])
    sent = recorded(provider)
    outcome = execute(store, scripted(tmp_path), provider)
    assert outcome.status == RunStatus.COMPLETED, outcome
    prompt = sent[0].messages[-1]["content"]
    assert prompt.startswith("Write a title for: birds in winter\nthe answer:\n  - text: string (required)")
    snapshot = nodes_of(store, outcome.run_id)["title"].input_snapshot
    assert snapshot["rendered_user_prompt"] == prompt
    record = snapshot["prompt_script"]
    assert record["prompt"] == prompt
    assert [c["api"] for c in record["host_calls"]] == ["getVar", "getSchemaHint"]
    assert record["host_calls"][0]["value"] == "birds in winter"
    assert [e["args"] for e in record["events"] if e["type"] == "log"] == [["outline has", 15, "characters"]]


def test_a_failing_script_fails_the_node_saying_where(store: Store, tmp_path: Path) -> None:
    code = "async function main() {\n  const v = await getVar('nowhere.at.all');\n  return v;\n}"
    outcome = execute(store, scripted(tmp_path, code), script(tmp_path, []))
    assert outcome.status == RunStatus.FAILED
    error = nodes_of(store, outcome.run_id)["title"].error
    assert error["kind"] == "prompt_script"
    assert "no value at 'nowhere.at.all'" in error["message"]
    assert "(line 2, column" in error["message"]


def test_a_stored_template_is_run_by_its_id_and_recorded(store: Store, tmp_path: Path) -> None:
    store.templates.create("short_title", name="Short title", script_code=SCRIPT, category="titles")
    graph = scripted(tmp_path)
    data = yaml.safe_load(Path(graph).read_text())
    data["nodes"][1]["prompt_script"] = "short_title"
    Path(graph).write_text(yaml.safe_dump(data))
    provider = script(tmp_path, [{"node": "title", "output": {"text": "Winter birds"}}])
    outcome = execute(store, graph, provider)
    assert outcome.status == RunStatus.COMPLETED, outcome
    record = nodes_of(store, outcome.run_id)["title"].input_snapshot["prompt_script"]
    assert record["template"] == {"id": "short_title", "code": SCRIPT}  # what ran, even if it is edited later
    assert record["prompt"].startswith("Write a title for: birds in winter")


def test_a_template_id_that_is_not_stored_fails_the_node_clearly(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [{"id": "t", "type": "LLM_CALL", "prompt_script": "weekly_report"}], [])
    outcome = execute(store, graph, script(tmp_path, []))
    error = nodes_of(store, outcome.run_id)["t"].error
    assert error["kind"] == "prompt_script"
    assert "names the template 'weekly_report', but it is not stored" in error["message"]
    assert "plait templates list" in error["message"]


def test_validate_parses_an_inline_script_and_points_at_the_error(tmp_path: Path) -> None:
    result = compile_file(scripted(tmp_path, "async function main() {\n  return `x ${ }`;\n}"))
    (error,) = [d for d in result.errors if d.code == "bad_expression"]
    assert error.node_id == "title"
    assert "prompt_script" in error.message
    assert "at line 2" in error.message


def test_the_dry_run_runs_the_script_and_shows_its_prompt(tmp_path: Path) -> None:
    result = compile_file(scripted(tmp_path))
    assert result.expanded is not None
    graph: GraphDef = result.expanded

    async def go() -> Any:
        runtime = Runtime(None)
        try:
            return await dry_run(graph, {}, runtime, upstream={"outline": {"text": "a real outline"}})
        finally:
            await runtime.aclose()

    dry = asyncio.run(go())
    title = next(n for n in dry.nodes if n.node_id == "title")
    assert title.messages is not None
    assert title.messages[-1]["content"].startswith("Write a title for: a real outline")
