"""A run's semantics across corrections, on a real store (SQLite and PostgreSQL): an explicit
rerun asks the model afresh while the nodes after it keep the cache; corrections leave the
execution times alone; a refused run is never left pending; cancel and delete; the record of
a run's model and of its changes."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.outcome import EngineError
from plait.engine.runner import Engine
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, Usage
from plait.model.enums import DownstreamPolicy
from plait.runs.corrections import Corrections
from plait.runs.start import start_run
from plait.store import Store
from plait.store.run_admin import RunEnded

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


class Counting(Provider):
    """A cacheable provider that always gives the same answer and counts calls per node prompt."""

    name = "counting"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def cache_identity(self, request: ChatRequest) -> str:
        return "counting/m1"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls.append(str(request.messages[-1]["content"]))
        return ChatResponse(content='{"text": "same"}', usage=Usage(4, 2), provider="counting", model="m1")


def chain(tmp_path: Path) -> str:
    data = {
        "id": "chain",
        "schemas": [{"id": "text", "schema": TEXT}],
        "nodes": [
            {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "A {{ input.text }}"},
            {"id": "b", "type": "LLM_CALL", "user_prompt_tpl": "B {{ a.text }}"},
        ],
        "edges": [
            {"source": "a", "target": "b", "schema_id": "text"},
            {"source": "b", "target": "END", "schema_id": "text"},
        ],
    }
    path = tmp_path / "chain.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def execute(store: Store, run_id: str, provider: Provider | None, **engine: Any) -> Any:
    return asyncio.run(Engine(store, provider, **engine).run(run_id))


def newest(store: Store, run_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in store.runs.node_runs(run_id):
        if n.node_id not in out or n.activation > out[n.node_id].activation:
            out[n.node_id] = n
    return out


def test_an_explicit_rerun_bypasses_the_cache_and_its_downstream_keeps_it(store: Store, tmp_path: Path) -> None:
    path = chain(tmp_path)
    model = Counting()
    first = start_run(store, path, {"text": "x"})
    assert execute(store, first, model).status == "completed"
    assert len(model.calls) == 2
    Corrections(store).rerun(first, "a", downstream=True)
    assert execute(store, first, model).status == "completed"
    nodes = newest(store, first)
    assert nodes["a"].activation == 2
    assert not nodes["a"].attempts[-1].get("cache_hit")
    assert nodes["b"].attempts[-1].get("cache_hit") is True  # same input: from the cache
    assert len(model.calls) == 3


class Numbered(Counting):
    """Like `Counting`, but each answer says which call it was."""

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls.append(str(request.messages[-1]["content"]))
        content = json.dumps({"text": f"answer {len(self.calls)}"})
        return ChatResponse(content=content, usage=Usage(4, 2), provider="counting", model="m1")


def test_the_fresh_answer_of_an_explicit_rerun_replaces_the_cached_one(store: Store, tmp_path: Path) -> None:
    model = Numbered()
    path = chain(tmp_path)
    first = start_run(store, path, {"text": "w"})
    execute(store, first, model)
    assert newest(store, first)["a"].effective_output["text"] == "answer 1"
    Corrections(store).rerun(first, "a")
    execute(store, first, model)
    fresh = newest(store, first)["a"].effective_output["text"]
    assert fresh != "answer 1"
    later = start_run(store, path, {"text": "w"})  # the same request again: answered from the cache
    execute(store, later, model)
    assert newest(store, later)["a"].attempts[-1].get("cache_hit") is True
    assert newest(store, later)["a"].effective_output["text"] == fresh


def test_a_rerun_may_use_the_cache_when_asked(store: Store, tmp_path: Path) -> None:
    model = Counting()
    run_id = start_run(store, chain(tmp_path), {"text": "y"})
    execute(store, run_id, model)
    Corrections(store).rerun(run_id, "a", fresh=False)
    execute(store, run_id, model)
    assert newest(store, run_id)["a"].attempts[-1].get("cache_hit") is True
    assert len(model.calls) == 2


def test_corrections_keep_the_execution_times(store: Store, tmp_path: Path) -> None:
    model = Counting()
    run_id = start_run(store, chain(tmp_path), {"text": "z"})
    execute(store, run_id, model)
    before = newest(store, run_id)["a"]
    executed = store.runs.get(run_id).active_s
    time.sleep(0.5)  # a person thinking
    Corrections(store).override(run_id, "a", {"text": "mine"}, policy=DownstreamPolicy.RERUN)
    execute(store, run_id, model)
    after = newest(store, run_id)["a"]
    assert (after.started_at, after.completed_at) == (before.started_at, before.completed_at)
    assert after.override_at is not None
    assert after.override_at > before.completed_at
    run = store.runs.get(run_id)
    assert run.completed_at is not None
    assert run.started_at is not None
    assert run.active_s > executed
    assert run.active_s < (run.completed_at - run.started_at) - 0.4  # the person's half second is not in it


def test_a_run_the_engine_refuses_is_never_left_pending(store: Store, tmp_path: Path) -> None:
    run_id = start_run(store, chain(tmp_path), {"text": "x"})
    with pytest.raises(EngineError, match="no provider"):
        execute(store, run_id, None)
    run = store.runs.get(run_id)
    assert run.status == "failed"
    assert run.error is not None
    assert "no provider" in run.error["message"]


def test_a_refused_reopened_run_is_paused_not_pending(store: Store, tmp_path: Path) -> None:
    run_id = start_run(store, chain(tmp_path), {"text": "x"})
    execute(store, run_id, Counting())
    Corrections(store).rerun(run_id, "b")
    with pytest.raises(EngineError):
        execute(store, run_id, None)
    assert store.runs.get(run_id).status == "paused"
    assert execute(store, run_id, Counting()).status == "completed"  # resumable on a model


def test_delete_removes_the_run_its_node_runs_ledger_and_cached_answers(store: Store, tmp_path: Path) -> None:
    run_id = start_run(store, chain(tmp_path), {"text": "del"})
    execute(store, run_id, Counting())
    with pytest.raises(RunEnded, match="deleted only when forced"):
        store.run_admin.delete(run_id)
    gone = store.run_admin.delete(run_id, force=True)
    assert (gone.node_runs, gone.cache_entries) == (2, 2)
    assert gone.ledger_versions >= 3
    assert store.ledger.history(run_id) == []
    assert store.runs.list() == []
    again = start_run(store, chain(tmp_path), {"text": "del"})
    model = Counting()
    execute(store, again, model)
    assert len(model.calls) == 2  # its cached answers went with it


def test_cancel_a_pending_run(store: Store, tmp_path: Path) -> None:
    run_id = start_run(store, chain(tmp_path), {"text": "x"})
    assert store.run_admin.cancel(run_id) == "pending"
    assert store.runs.get(run_id).status == "cancelled"
    with pytest.raises(RunEnded):
        store.run_admin.cancel(run_id)


def test_a_change_of_model_is_recorded(store: Store, tmp_path: Path) -> None:
    first, second = {"llm": "scripted:/a.yaml"}, {"llm": "scripted:/b.yaml"}
    run_id = start_run(store, chain(tmp_path), {"text": "x"}, llm=first)
    assert store.runs.get(run_id).llm == first
    assert store.run_admin.set_llm(run_id, first, by="resume") is False
    assert store.run_admin.set_llm(run_id, second, by="rerun") is True
    run = store.runs.get(run_id)
    assert run.llm == second
    ((change),) = run.llm_history
    assert (change["by"], change["from"], change["to"]) == ("rerun", first, second)
