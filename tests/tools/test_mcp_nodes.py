"""LLM_CALL nodes using MCP servers, run by the engine on scripted answers against Plait's own
MCP test server over stdio (SPEC §7, seed 000 §4.3–§4.6)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from plait.config import McpServerConfig
from plait.engine.runner import Engine, EngineError, RunOutcome
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.store import Store, current_activations
from tests.engine.test_engine import graph_file
from tests.engine.test_tool_loop import TEXT, answers
from tests.tools.test_mcp_sessions import own_server

CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "country", "population"],
}


def city_graph(tmp_path: Path, **node: Any) -> str:
    """ask (LLM with the test server's tools; lookup_city routed to e_city) -> brief (reads it);
    ask -> END (its answer)."""
    server = {
        "server_id": "test",
        "allowed_tools": ["lookup_city", "crash"],
        "output_edge_map": {"lookup_city": "e_city"},
    }
    return graph_file(
        tmp_path,
        [
            {
                "id": "ask",
                "type": "LLM_CALL",
                "user_prompt_tpl": "Facts about {{ input.city }}",
                "mcp_servers": [server],
                **node,
            },
            {"id": "brief", "type": "TRANSFORM", "transform_expr": "({text: current.city + ', ' + current.country})"},
        ],
        [
            {"id": "e_city", "source": "ask", "target": "brief", "schema_id": "city"},
            {"id": "e_out", "source": "ask", "target": "END", "schema_id": "text"},
        ],
        schemas=[{"id": "city", "schema": CITY}, {"id": "text", "schema": TEXT}],
    )


def execute(
    store: Store,
    graph: str,
    provider: Any,
    run_input: dict[str, Any] | None = None,
    servers: tuple[McpServerConfig, ...] = (own_server(),),
) -> RunOutcome:
    run_id = start_run(store, graph, run_input or {"city": "Oslo"})

    async def go() -> RunOutcome:
        engine = Engine(store, provider, mcp_servers=servers)
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"node": "ask", "tool_calls": [{"name": tool, "arguments": arguments}], "times": 1}


def test_an_mcp_tool_result_flows_down_its_mapped_edge_schema_checked(store: Store, tmp_path: Path) -> None:
    provider = answers(tmp_path, call("lookup_city", name="Oslo"), {"node": "ask", "output": {"text": "done"}})
    outcome = execute(store, city_graph(tmp_path), provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    nodes = current_activations(store.runs.node_runs(outcome.run_id))
    assert nodes["brief"].effective_output == {"text": "Oslo, Norway"}
    ask = nodes["ask"]
    assert ask.output["_routed"] == {"e_city": {"city": "Oslo", "country": "Norway", "population": 717710}}
    assert [t["function"]["name"] for t in ask.input_snapshot["tools"]] == ["lookup_city", "crash"]  # allowed_tools
    (round_one,) = ask.input_snapshot["tool_rounds"]
    assert round_one["calls"][0]["source"] == "mcp:test"
    assert [t["function"]["name"] for t in provider.requests[0].tools] == ["lookup_city", "crash"]
    assert provider.requests[0].tools[0]["function"]["parameters"]["required"] == ["name"]  # the server's schema


def test_a_result_that_breaks_the_mapped_edges_schema_fails_the_node_with_the_details(
    store: Store, tmp_path: Path
) -> None:
    graph = city_graph(tmp_path)
    graph_text = Path(graph).read_text().replace("lookup_city", "misshapen_city")
    Path(graph).write_text(graph_text)
    provider = answers(tmp_path, call("misshapen_city", name="Oslo"), {"node": "ask", "output": {"text": "done"}})
    outcome = execute(store, graph, provider)
    assert outcome.status == RunStatus.FAILED
    ask = current_activations(store.runs.node_runs(outcome.run_id))["ask"]
    assert ask.error is not None
    assert ask.error["kind"] == "schema"
    assert "misshapen_city" in ask.error["message"]
    assert "e_city" in ask.error["message"]
    assert any("'city' is a required property" in d for d in ask.error["details"])


def test_a_crashing_server_fails_the_node_not_the_engine(store: Store, tmp_path: Path) -> None:
    graph = city_graph(tmp_path)
    crashing = answers(tmp_path, call("crash"), {"node": "ask", "output": {"text": "never"}})
    fine = answers(tmp_path, call("lookup_city", name="Lyon"), {"node": "ask", "output": {"text": "ok"}})
    run_ids = [start_run(store, graph, {"city": "Oslo"}), start_run(store, graph, {"city": "Lyon"})]

    async def go() -> list[RunOutcome]:
        engine = Engine(store, crashing, mcp_servers=(own_server(),))
        try:
            first = await engine.run(run_ids[0])
            engine.runtime.provider = fine
            return [first, await engine.run(run_ids[1])]
        finally:
            await engine.aclose()

    crashed, after = asyncio.run(go())
    assert crashed.status == RunStatus.FAILED
    ask = current_activations(store.runs.node_runs(crashed.run_id))["ask"]
    assert ask.error is not None
    assert ask.error["kind"] == "mcp"
    assert "MCP server 'test' failed during tools/call 'crash'" in ask.error["message"]
    assert "boom: crashing on purpose" in ask.error["message"]
    assert after.status == RunStatus.COMPLETED, after.error  # the same engine goes on
    brief = current_activations(store.runs.node_runs(after.run_id))["brief"]
    assert brief.effective_output == {"text": "Lyon, France"}


def test_nodes_of_a_run_share_one_session_closed_when_the_run_ends(store: Store, tmp_path: Path) -> None:
    asker = {
        "type": "LLM_CALL",
        "user_prompt_tpl": "who?",
        "mcp_servers": [{"server_id": "test", "allowed_tools": ["whoami"]}],
    }
    graph = graph_file(
        tmp_path,
        [{"id": "first", **asker}, {"id": "second", **asker}],
        [
            {"source": "first", "target": "second", "schema_id": "text"},
            {"source": "second", "target": "END", "schema_id": "text"},
        ],
    )
    provider = answers(
        tmp_path,
        *[{"node": n, "tool_calls": [{"name": "whoami", "arguments": {}}], "times": 1} for n in ("first", "second")],
        {"output": {"text": "done"}},
    )
    outcome = execute(store, graph, provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    nodes = current_activations(store.runs.node_runs(outcome.run_id))
    pids = [nodes[n].input_snapshot["tool_rounds"][0]["calls"][0]["result"]["pid"] for n in ("first", "second")]
    assert pids[0] == pids[1]
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)


def test_resources_are_injected_as_each_node_says(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [
            {
                "id": "ask",
                "type": "LLM_CALL",
                "system_prompt": "You help with meetings.",
                "user_prompt_tpl": "Style: {{ context.style }}. What changed?",
                "mcp_resources": [
                    {"server_id": "test", "uri": "doc://%input.doc%", "inject_as": "user_context"},
                    {"server_id": "test", "uri": "doc://policy", "inject_as": "system_context"},
                    {"server_id": "test", "uri": "notes://style", "inject_as": "context_field", "field_name": "style"},
                ],
            }
        ],
        [{"source": "ask", "target": "END", "schema_id": "text"}],
    )
    provider = answers(tmp_path, {"node": "ask", "output": {"text": "Thursday"}})
    outcome = execute(store, graph, provider, {"doc": "minutes"})
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    snapshot = current_activations(store.runs.node_runs(outcome.run_id))["ask"].input_snapshot
    assert snapshot["rendered_system_prompt"] == (
        "You help with meetings.\n\nDocument policy: the meeting moved to Thursday."
    )
    assert snapshot["rendered_user_prompt"] == (
        "Style: Answer in one short sentence.. What changed?\n\nDocument minutes: the meeting moved to Thursday."
    )
    assert snapshot["context_slice"]["style"] == "Answer in one short sentence."
    assert [r["uri"] for r in snapshot["mcp"]["resources"]] == ["doc://minutes", "doc://policy", "notes://style"]
    assert provider.requests[0].messages[-1]["content"] == snapshot["rendered_user_prompt"]


def test_an_mcp_prompt_replaces_the_nodes_own_prompts(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [
            {
                "id": "ask",
                "type": "LLM_CALL",
                "system_prompt": "ignored when the prompt comes from the server",
                "mcp_prompt": {
                    "server_id": "test",
                    "prompt_name": "summarize",
                    "arguments": {"topic": "%input.topic%"},
                },
            }
        ],
        [{"source": "ask", "target": "END", "schema_id": "text"}],
    )
    provider = answers(tmp_path, {"node": "ask", "match": "Summarize green tea", "output": {"text": "short"}})
    outcome = execute(store, graph, provider, {"topic": "green tea"})
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    snapshot = current_activations(store.runs.node_runs(outcome.run_id))["ask"].input_snapshot
    assert snapshot["messages"] == [{"role": "user", "content": "Summarize green tea for a busy reader."}]
    assert snapshot["mcp"]["prompt"] == {"server_id": "test", "name": "summarize", "arguments": {"topic": "green tea"}}
    assert provider.requests[0].messages == snapshot["messages"]


def test_tools_the_server_does_not_list_or_names_offered_twice_fail_the_node(store: Store, tmp_path: Path) -> None:
    unknown = city_graph(tmp_path)
    Path(unknown).write_text(Path(unknown).read_text().replace("- crash", "- teleport"))
    outcome = execute(store, unknown, answers(tmp_path, {"output": {"text": "x"}}))
    error = current_activations(store.runs.node_runs(outcome.run_id))["ask"].error
    assert error is not None
    assert error["kind"] == "tools"
    assert "MCP server 'test' has no tool named 'teleport'" in error["message"]

    inline = {"name": "crash", "handler": "CONTEXT_WRITE"}
    twice = city_graph(tmp_path, tools=[inline])
    outcome = execute(store, twice, answers(tmp_path, {"output": {"text": "x"}}))
    error = current_activations(store.runs.node_runs(outcome.run_id))["ask"].error
    assert error is not None
    assert "two tools are named 'crash' (inline and mcp:test)" in error["message"]


def test_a_model_without_the_mcp_capability_is_refused_before_the_run(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait.config import load_config
    from plait.llm.pool import ProviderPool

    config = tmp_path / "plait.toml"
    config.write_text(
        '[[providers]]\nid = "plain"\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "PLAIT_TEST_NO_KEY"\nmodels = [{ name = "m1", capabilities = ["tools", "json_schema"] }]\n'
        '[roles]\nchat = "plain/m1"\n'
    )
    monkeypatch.setenv("PLAIT_TEST_NO_KEY", "x")
    with pytest.raises(EngineError, match=r"node 'ask'.*plain/m1.*lacks the capability mcp"):
        execute(store, city_graph(tmp_path), ProviderPool(load_config(str(config))))
    (run,) = store.runs.list()
    assert (run.status, run.started_at) == (RunStatus.FAILED, None)  # refused before it started, never left pending
    assert run.error is not None
    assert "lacks the capability mcp" in run.error["message"]
