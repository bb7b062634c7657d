"""Generate as a use case: against a run's node the answer is parsed with that node's contract
(or a schema of the graph by id); cancelling while the script still runs ends the generation
`cancelled` once the script's thread has stopped; no model is a `llm_request` error; events come
in order, the final one last."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from plait.runs.generate import GenerateRequest, generate
from plait.runs.templates import InputHost, node_host
from plait.store import Store
from tests.engine.test_engine import TEXT, execute, graph_file, script

TITLE = {"type": "object", "properties": {"title": {"type": "string", "maxLength": 20}}, "required": ["title"]}


def titled_run(store: Store, tmp_path: Path) -> str:
    """A completed run whose `title` node's out-edge contract is TITLE."""
    path = graph_file(
        tmp_path,
        [
            {"id": "outline", "type": "TRANSFORM", "transform_expr": "({text: 'birds in winter'})"},
            {"id": "title", "type": "LLM_CALL", "user_prompt_tpl": "Title: {{ outline.text }}"},
        ],
        [
            {"source": "outline", "target": "title", "schema_id": "text"},
            {"source": "title", "target": "END", "schema_id": "title"},
        ],
        schemas=[{"id": "text", "schema": TEXT}, {"id": "title", "schema": TITLE}],
    )
    outcome = execute(store, path, script(tmp_path, [{"node": "title", "output": {"title": "Birds"}}]))
    return outcome.run_id


def collect(request: GenerateRequest, provider: Any) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    events: list[tuple[str, dict[str, Any]]] = []

    async def go() -> Any:
        return await generate(request, provider, lambda kind, data: events.append((kind, data)))

    return asyncio.run(go()), events


def test_against_a_runs_node_the_answer_is_parsed_with_that_nodes_contract(store: Store, tmp_path: Path) -> None:
    run_id = titled_run(store, tmp_path)
    host = node_host(store, run_id, "title")
    code = 'async function main() { return "Title for " + await getVar("outline.text") }'
    good = script(tmp_path, [{"match": "Title for", "output": {"title": "Winter birds"}}])
    result, events = collect(GenerateRequest(code, host, schema_target="output"), good)
    assert events[0][0] == "prompt"
    assert events[0][1]["prompt"] == "Title for birds in winter"
    assert events[-1][0] == "done"
    assert result.value == {"title": "Winter birds"}
    long = script(tmp_path, [{"output": {"title": "A title far longer than twenty characters"}}])
    result, events = collect(GenerateRequest(code, host, schema_target="title"), long)
    assert events[-1][0] == "failed"
    assert (result.failure.layer, result.failure.kind) == ("parse", "schema")
    assert "title" in result.failure.message


def test_a_target_naming_an_older_version_is_parsed_with_the_graphs_and_says_so(store: Store, tmp_path: Path) -> None:
    run_id = titled_run(store, tmp_path)  # its `title` schema is at 1.0.0
    host = node_host(store, run_id, "title")
    code = 'async function main() { return "Title for " + await getVar("outline.text") }'
    long = script(tmp_path, [{"output": {"title": "A title far longer than twenty characters"}}])
    result, _ = collect(GenerateRequest(code, host, schema_target="title@0.9.0"), long)
    assert (result.failure.layer, result.failure.kind) == ("parse", "schema")  # parsed with the graph's title
    assert "this template was written for schema title@0.9.0; the graph has version 1.0.0" in result.notes[0]
    result, _ = collect(GenerateRequest(code, host, schema_target="title@1.0.0"), long)
    assert result.notes == []  # written for the version the graph has: nothing to say


def test_cancelling_while_the_script_runs_waits_for_its_thread_then_ends_cancelled(tmp_path: Path) -> None:
    events: list[tuple[str, dict[str, Any]]] = []
    request = GenerateRequest("async function main() { for (;;) { await 0 } }", InputHost({}))

    async def go() -> float:
        task = asyncio.create_task(generate(request, None, lambda kind, data: events.append((kind, data))))
        await asyncio.sleep(0.5)
        started = time.monotonic()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return time.monotonic() - started
        raise AssertionError("the generation was not cancelled")

    waited = asyncio.run(go())
    assert waited < 2  # stopped at its next await, long before its 8 s limit
    assert events[-1][0] == "failed"
    assert events[-1][1]["error"]["layer"] == "cancelled"


def test_without_a_model_the_request_layer_fails_after_the_prompt(tmp_path: Path) -> None:
    result, events = collect(GenerateRequest('async function main() { return "hi" }', InputHost({})), None)
    assert [kind for kind, _ in events] == ["prompt", "failed"]
    assert (result.failure.layer, result.failure.kind) == ("llm_request", "config")
    assert "--llm" in result.failure.message
