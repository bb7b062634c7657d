"""A runtime built without an engine (a dry run, a test) is given no collaborators: each one an
executor asks for refuses, saying what is missing, as it did when they were None."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from plait.compile.compiler import compile_file
from plait.engine.events import NodeSkipped
from plait.engine.inline_tools import ToolContext, ToolFailed, run_tool
from plait.engine.runtime import Runtime
from plait.model.tools import ToolDef, ToolHandler
from plait.runs.dry_run import dry_run
from plait.sandbox.scripts import HostError
from tests.engine.test_engine import graph_file


def test_routes_refuse_outside_plait_serve() -> None:
    with pytest.raises(HostError, match="readRoute reads Plait's own HTTP API, which this engine has not been given"):
        Runtime(None).routes("/api/runs", {})


def test_a_sub_run_is_refused_in_the_words_the_model_was_told_before() -> None:
    tool = ToolDef(name="delegate", description="d", handler=ToolHandler.WORKFLOW_TASK, graph="other")

    async def evaluate(expression: str, scope: dict[str, Any]) -> Any:
        return None

    with pytest.raises(ToolFailed) as refused:
        asyncio.run(run_tool(tool, {}, ToolContext({}, {}, evaluate, Runtime(None).sub_run)))
    assert str(refused.value) == "sub-runs are not available here"


def test_child_runs_refuse_and_events_are_dropped() -> None:
    runtime = Runtime(None)
    with pytest.raises(RuntimeError, match="belongs to no engine"):
        runtime.children.failure(None)  # type: ignore[arg-type]
    assert runtime.emit(NodeSkipped("r", "a")) is None


def test_a_stored_template_is_refused_where_none_are_stored(tmp_path: Path) -> None:
    graph = compile_file(
        graph_file(
            tmp_path,
            [{"id": "title", "type": "LLM_CALL", "prompt_script": "tpl-outline"}],
            [{"source": "title", "target": "END", "schema_id": "text"}],
        )
    ).expanded
    assert graph is not None

    async def go() -> Any:
        runtime = Runtime(None)
        try:
            return await dry_run(graph, {}, runtime)
        finally:
            await runtime.aclose()

    problems = asyncio.run(go()).problems
    assert any("names the template 'tpl-outline', but this engine reads no stored templates" in p for p in problems)
