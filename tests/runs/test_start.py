"""`Engine.start`: create a run and execute it, the run row written only once admitted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from plait.engine.run_input import StartError, check_input
from plait.engine.runner import Engine, EngineError
from plait.llm.provider import Provider
from plait.llm.scripted import ScriptedProvider
from plait.llm.types import ChatRequest, ChatResponse
from plait.model.enums import RunStatus
from plait.runs.start import resolve_graph
from plait.store import Store
from tests.engine.test_engine import graph_file, llm, script


class CountingProvider(Provider):
    """Answers at once and records how many runs the store held at its first call."""

    name = "counting"

    def __init__(self, store: Store, inner: ScriptedProvider):
        self.store = store
        self.inner = inner
        self.runs_at_first_call: int | None = None

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self.runs_at_first_call is None:
            self.runs_at_first_call = len(self.store.runs.list(limit=10_000))
        return await self.inner.complete(request)


def fanout(tmp_path: Path) -> str:
    return graph_file(
        tmp_path,
        [llm("root"), llm("a"), llm("b"), {"id": "m", "type": "MERGE"}],
        [
            {"source": "root", "target": "a", "schema_id": "text"},
            {"source": "root", "target": "b", "schema_id": "text"},
            {"source": "a", "target": "m", "schema_id": "text"},
            {"source": "b", "target": "m", "schema_id": "text"},
        ],
        input_schema={"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
    )


def test_start_creates_executes_and_records_the_run(store: Store, tmp_path: Path) -> None:
    stored = resolve_graph(store, fanout(tmp_path))
    provider = script(tmp_path, [{"output": {"text": "x"}}])

    async def go() -> Any:
        engine = Engine(store, provider)
        try:
            return await engine.start(stored, {"topic": "t"})
        finally:
            await engine.aclose()

    outcome = asyncio.run(go())
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"a": {"text": "x"}, "b": {"text": "x"}}
    record = store.runs.get(outcome.run_id)
    assert record.status == RunStatus.COMPLETED
    assert record.input == {"topic": "t"}
    assert (record.graph_id, record.graph_version) == (stored.graph_id, stored.version)
    assert record.started_at is not None
    assert record.completed_at is not None
    assert record.lease_owner is None
    assert {n.node_id for n in store.runs.node_runs(outcome.run_id)} == {"root", "a", "b", "m"}


def test_many_starts_call_the_model_before_every_run_is_created(store: Store, tmp_path: Path) -> None:
    stored = resolve_graph(store, fanout(tmp_path))
    provider = CountingProvider(store, script(tmp_path, [{"output": {"text": "x"}}]))
    runs = 60

    async def go() -> list[Any]:
        engine = Engine(store, provider, start_concurrency=4)
        try:
            return await asyncio.gather(*(engine.start(stored, {"topic": f"t{i}"}) for i in range(runs)))
        finally:
            await engine.aclose()

    outcomes = asyncio.run(go())
    assert all(o.status == RunStatus.COMPLETED for o in outcomes)
    assert len({o.run_id for o in outcomes}) == runs
    assert provider.runs_at_first_call is not None
    assert provider.runs_at_first_call <= 8, (
        f"{provider.runs_at_first_call} of {runs} runs existed at the first model call: run creation is not admitted"
    )


def test_start_refuses_an_unserved_graph_without_creating_a_run(store: Store, tmp_path: Path) -> None:
    stored = resolve_graph(store, fanout(tmp_path))

    async def go() -> Any:
        engine = Engine(store, None)  # no provider: the LLM_CALL nodes cannot be served
        try:
            return await engine.start(stored, {"topic": "t"})
        finally:
            await engine.aclose()

    with pytest.raises(EngineError, match="node 'root'"):
        asyncio.run(go())
    assert store.runs.list() == []


def test_check_input_names_the_missing_field(store: Store, tmp_path: Path) -> None:
    stored = resolve_graph(store, fanout(tmp_path))
    with pytest.raises(StartError) as caught:
        check_input(stored, {})
    assert "input_schema" in caught.value.message
    assert any("topic" in line for line in caught.value.details)
