"""The tool loop of an LLM_CALL node with inline tools (SPEC §7, seed 000 §4.5), on scripted answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from plait.engine.runner import Engine, EngineError, RunOutcome
from plait.llm.provider import Provider
from plait.llm.scripted import ScriptedProvider
from plait.llm.types import ChatRequest, ChatResponse
from plait.model.enums import RunStatus
from plait.runs.start import local_graphs, start_run
from plait.store import Store, current_activations
from tests.engine.test_engine import graph_file, script
from tests.runs.test_corrections import drive_with

NOTE = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


class Recorder(Provider):
    """The scripted provider, keeping every request it got."""

    name = "recorder"

    def __init__(self, inner: ScriptedProvider):
        self.inner = inner
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return await self.inner.complete(request)


def tooled_graph(tmp_path: Path, tool: dict[str, Any], **node: Any) -> str:
    """plan (LLM with one tool routed to e_note) -> keep (reads the note); plan -> END (answer)."""
    return graph_file(
        tmp_path,
        [
            {
                "id": "plan",
                "type": "LLM_CALL",
                "user_prompt_tpl": "Plan for {{ input.topic }}",
                "tools": [tool],
                **node,
            },
            {"id": "keep", "type": "TRANSFORM", "transform_expr": "({text: 'kept ' + current.note})"},
        ],
        [
            {"id": "e_note", "source": "plan", "target": "keep", "schema_id": "note"},
            {"id": "e_out", "source": "plan", "target": "END", "schema_id": "text"},
        ],
        schemas=[{"id": "note", "schema": NOTE}, {"id": "text", "schema": TEXT}],
    )


def save_note(**extra: Any) -> dict[str, Any]:
    return {"name": "save_note", "handler": "CONTEXT_WRITE", "parameters": NOTE, "output_edge_id": "e_note", **extra}


def run(store: Store, graph: str, provider: Provider, run_input: dict[str, Any] | None = None) -> RunOutcome:
    return drive_with(store, start_run(store, graph, run_input or {"topic": "tea"}), provider)


def answers(tmp_path: Path, *rules: dict[str, Any]) -> Recorder:
    return Recorder(script(tmp_path, list(rules)))


def test_a_tool_result_goes_down_its_edge_and_the_final_answer_down_the_others(store: Store, tmp_path: Path) -> None:
    provider = answers(
        tmp_path,
        {"node": "plan", "tool_calls": [{"name": "save_note", "arguments": {"note": "steep 3 min"}}], "times": 1},
        {"node": "plan", "output": {"text": "plan done"}},
    )
    outcome = run(store, tooled_graph(tmp_path, save_note()), provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    nodes = current_activations(store.runs.node_runs(outcome.run_id))
    assert nodes["keep"].effective_output["text"] == "kept steep 3 min"
    plan = nodes["plan"]
    assert plan.output["text"] == "plan done"
    assert plan.output["_routed"] == {"e_note": {"note": "steep 3 min"}}
    assert outcome.output == {"plan": {"text": "plan done"}, "keep": {"text": "kept steep 3 min"}}
    rounds = plan.input_snapshot["tool_rounds"]
    assert rounds == [
        {
            "round": 1,
            "calls": [
                {
                    "tool": "save_note",
                    "source": "inline",
                    "arguments": {"note": "steep 3 min"},
                    "result": {"note": "steep 3 min"},
                }
            ],
        }
    ]
    assert [a.get("tool_round", False) for a in plan.attempts] == [True, True]
    first, second = provider.requests
    assert [t["function"]["name"] for t in first.tools] == ["save_note"]
    assert first.response_format is None  # rounds with tools ask for no format
    assert second.tools  # the model answered without a tool call in round 2: that answer was valid
    assert second.messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_0",
        "content": json.dumps({"note": "steep 3 min"}),
    }


def test_after_max_rounds_the_final_call_drops_the_tools_and_forces_the_format(store: Store, tmp_path: Path) -> None:
    provider = answers(
        tmp_path,
        {"node": "plan", "tool_calls": [{"name": "save_note", "arguments": {"note": "again"}}], "times": 2},
        {"node": "plan", "output": {"text": "final"}},
    )
    outcome = run(store, tooled_graph(tmp_path, save_note(), max_tool_rounds=2, tool_choice="required"), provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert [bool(r.tools) for r in provider.requests] == [True, True, False]
    assert [r.tool_choice for r in provider.requests[:2]] == ["required", "auto"]  # forced once, not forever
    assert provider.requests[-1].response_format is not None
    assert len(provider.requests[-1].messages) == 1 + 2 * 2  # the prompt, then two rounds of call + result
    plan = current_activations(store.runs.node_runs(outcome.run_id))["plan"]
    assert [(a["attempt"], a.get("tool_round", False)) for a in plan.attempts] == [(1, True), (2, True), (3, False)]


def test_transform_tool_and_unknown_tool(store: Store, tmp_path: Path) -> None:
    double = {
        "name": "double",
        "handler": "TRANSFORM_EXPR",
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        "transform_expr": "({n: args.n * 2, topic: input.topic})",
    }
    provider = answers(
        tmp_path,
        {"node": "plan", "tool_calls": [{"name": "double", "arguments": {"n": 21}}, {"name": "nope"}], "times": 1},
        {"node": "plan", "tool_calls": [{"name": "double", "arguments": {"n": "x"}}], "times": 1},
        {"node": "plan", "output": {"text": "ok"}},
    )
    graph = graph_file(
        tmp_path,
        [{"id": "plan", "type": "LLM_CALL", "user_prompt_tpl": "go", "tools": [double]}],
        [{"id": "e_out", "source": "plan", "target": "END", "schema_id": "text"}],
        schemas=[{"id": "text", "schema": TEXT}],
    )
    outcome = run(store, graph, provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    rounds = current_activations(store.runs.node_runs(outcome.run_id))["plan"].input_snapshot["tool_rounds"]
    results = [c["result"] for r in rounds for c in r["calls"]]
    assert results[0] == {"n": 42, "topic": "tea"}
    assert "no tool named 'nope'" in results[1]["error"]
    assert "do not match the tool's parameters" in results[2]["error"]  # the model may fix it next round


def test_an_unused_routed_edge_is_skipped(store: Store, tmp_path: Path) -> None:
    provider = answers(tmp_path, {"node": "plan", "output": {"text": "no tool needed"}})
    outcome = run(store, tooled_graph(tmp_path, save_note()), provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    nodes = current_activations(store.runs.node_runs(outcome.run_id))
    assert nodes["keep"].status == "skipped"
    assert "_routed" not in nodes["plan"].output


def test_a_routed_result_that_breaks_its_edge_schema_fails_the_node(store: Store, tmp_path: Path) -> None:
    write_any = save_note(parameters={"type": "object"})
    provider = answers(
        tmp_path,
        {"node": "plan", "tool_calls": [{"name": "save_note", "arguments": {"wrong": 1}}], "times": 1},
        {"node": "plan", "output": {"text": "x"}},
    )
    outcome = run(store, tooled_graph(tmp_path, write_any), provider)
    assert outcome.status == RunStatus.FAILED
    plan = current_activations(store.runs.node_runs(outcome.run_id))["plan"]
    assert plan.error["kind"] == "schema"
    assert "e_note" in plan.error["message"]
    assert any("note" in d for d in plan.error["details"])


def test_a_workflow_task_tool_runs_a_sub_graph(store: Store, tmp_path: Path) -> None:
    sub = graph_file(
        tmp_path,
        [{"id": "shout", "type": "TRANSFORM", "transform_expr": "({note: input.note.toUpperCase()})"}],
        [{"source": "shout", "target": "END", "schema_id": "note"}],
        schemas=[{"id": "note", "schema": NOTE}],
        input_schema=NOTE,
        id="shouter",
    )
    stored_sub = start_run(store, sub, {"note": "warm-up"})  # stores the sub graph
    sub_id = store.runs.get(stored_sub).graph_id
    tool = save_note(handler="WORKFLOW_TASK", graph=sub_id)
    provider = answers(
        tmp_path,
        {"node": "plan", "tool_calls": [{"name": "save_note", "arguments": {"note": "quiet"}}], "times": 1},
        {"node": "plan", "output": {"text": "done"}},
    )
    outcome = run(store, tooled_graph(tmp_path, tool), provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    nodes = current_activations(store.runs.node_runs(outcome.run_id))
    assert nodes["keep"].effective_output["text"] == "kept QUIET"
    sub_runs = [r for r in store.runs.list(graph=sub_id) if r.status == RunStatus.COMPLETED]
    assert {"note": "QUIET"} in [r.output for r in sub_runs]


def test_a_server_engine_never_starts_a_sub_run_from_a_file_on_its_own_disk(store: Store, tmp_path: Path) -> None:
    """A graph sent to `plait serve` could name a file of the server's: without `graphs` (what the
    server passes) a WORKFLOW_TASK resolves stored graphs only; the CLI's `local_graphs` reads files."""
    sub = graph_file(
        tmp_path,
        [{"id": "shout", "type": "TRANSFORM", "transform_expr": "({note: current.note.toUpperCase()})"}],
        [{"source": "shout", "target": "END", "schema_id": "note"}],
        schemas=[{"id": "note", "schema": NOTE}],
        input_schema=NOTE,
        id="shouter",
    )
    tool = save_note(handler="WORKFLOW_TASK", graph=sub)

    def attempt(**engine_args: Any) -> tuple[str, dict[str, Any]]:
        provider = answers(
            tmp_path,
            {"node": "plan", "tool_calls": [{"name": "save_note", "arguments": {"note": "quiet"}}], "times": 1},
            {"node": "plan", "output": {"text": "done"}},
        )
        run_id = start_run(store, tooled_graph(tmp_path, tool), {"topic": "tea"})

        async def go() -> RunOutcome:
            engine = Engine(store, provider, **engine_args)
            try:
                return await engine.run(run_id)
            finally:
                await engine.aclose()

        outcome = asyncio.run(go())
        plan = current_activations(store.runs.node_runs(outcome.run_id))["plan"]
        (result,) = [c["result"] for c in plan.input_snapshot["tool_rounds"][0]["calls"]]
        return run_id, result

    served, result = attempt()
    assert f"no stored graph named '{sub}'" in result["error"]
    assert [r.id for r in store.runs.list()] == [served]  # no sub-run was started
    _, result = attempt(graphs=local_graphs(store))
    assert "error" not in result
    assert len(store.runs.list()) == 3  # the two runs, and the sub-run of the file


def test_a_model_without_the_tools_capability_is_refused_before_the_run(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait.config import load_config
    from plait.llm.pool import ProviderPool

    config = tmp_path / "plait.toml"
    config.write_text(
        '[[providers]]\nid = "plain"\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "PLAIT_TEST_NO_KEY"\nmodels = [{ name = "m1", capabilities = ["json_schema"] }]\n'
        '[roles]\nchat = "plain/m1"\n'
    )
    monkeypatch.setenv("PLAIT_TEST_NO_KEY", "x")
    pool = ProviderPool(load_config(str(config)))
    run_id = start_run(store, tooled_graph(tmp_path, save_note()), {"topic": "t"})

    async def go() -> Any:
        engine = Engine(store, pool)
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    with pytest.raises(EngineError, match=r"node 'plan'.*plain/m1.*lacks the capability tools"):
        asyncio.run(go())
    refused = store.runs.get(run_id)
    assert (refused.status, refused.started_at) == (RunStatus.FAILED, None)  # refused before it started, not pending


def test_a_node_naming_an_unconfigured_mcp_server_is_refused_up_front(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [{"id": "ask", "type": "LLM_CALL", "user_prompt_tpl": "time?", "mcp_servers": [{"server_id": "time"}]}],
        [{"source": "ask", "target": "END", "schema_id": "text"}],
        schemas=[{"id": "text", "schema": TEXT}],
    )
    with pytest.raises(EngineError, match=r"node 'ask' uses the MCP server 'time', which is not configured"):
        run(store, graph, answers(tmp_path, {"output": {"text": "noon"}}))
