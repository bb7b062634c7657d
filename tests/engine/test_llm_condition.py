"""A CONDITION decided by a model (`condition_llm`): the model picks one of the choices under an
enum schema, and the choice selects the out-edges; recorded like any model call. On SQLite and
PostgreSQL, with the scripted provider (the engine's behaviour, not a model's)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.runner import EngineError, RunOutcome
from plait.llm.scripted import ScriptedProvider
from plait.model.enums import RunStatus
from plait.store import Store
from tests.engine.test_engine import execute

GRAPH = {
    "id": "triage",
    "nodes": [
        {
            "id": "route",
            "type": "CONDITION",
            "condition_llm": {
                "prompt": "Is this feedback a bug report or praise? {{ input.feedback }}",
                "choices": ["bug", "praise"],
                "max_retries": 1,
            },
        },
        {"id": "file_bug", "type": "TRANSFORM", "transform_expr": "({filed: input.feedback})"},
        {"id": "thank", "type": "TRANSFORM", "transform_expr": "({reply: 'Thank you!'})"},
    ],
    "edges": [
        {"source": "route", "target": "file_bug", "condition_key": "bug"},
        {"source": "route", "target": "thank", "condition_key": "praise"},
    ],
}


def run(store: Store, tmp_path: Path, answers: list[dict[str, Any]], provider: bool = True) -> RunOutcome:
    graph = tmp_path / "triage.yaml"
    graph.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    script = tmp_path / "answers.yaml"
    script.write_text(yaml.safe_dump({"responses": answers}))
    chosen = ScriptedProvider.from_file(script) if provider else None
    return execute(store, str(graph), chosen, {"feedback": "The app crashes on start"})


def test_the_models_choice_selects_the_branch_and_is_recorded(store: Store, tmp_path: Path) -> None:
    outcome = run(store, tmp_path, [{"node": "route", "output": {"branch": "bug"}}])
    assert outcome.status == RunStatus.COMPLETED, outcome
    nodes = {n.node_id: n for n in store.runs.node_runs(outcome.run_id)}
    assert nodes["route"].output == {"branch": "bug"}
    assert nodes["file_bug"].status == "completed"
    assert nodes["thank"].status == "skipped"
    snapshot = nodes["route"].input_snapshot
    assert snapshot["node_type"] == "CONDITION"
    assert "The app crashes on start" in snapshot["rendered_user_prompt"]
    assert '"bug", "praise"' in snapshot["rendered_system_prompt"]
    schema = snapshot["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["branch"]["enum"] == ["bug", "praise"]
    assert nodes["route"].tokens_input > 0  # recorded like any model call


def test_an_answer_that_is_not_a_choice_is_retried_with_the_problem_then_fails(store: Store, tmp_path: Path) -> None:
    outcome = run(store, tmp_path, [{"node": "route", "output": {"branch": "maybe"}}])
    assert outcome.status == RunStatus.FAILED
    (route,) = [n for n in store.runs.node_runs(outcome.run_id) if n.node_id == "route"]
    assert len(route.attempts) == 2  # max_retries: 1
    assert "'maybe' is not one of ['bug', 'praise']" in " ".join(route.error["details"])


def test_a_run_without_a_provider_is_refused_before_it_starts(store: Store, tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="node 'route'"):
        run(store, tmp_path, [], provider=False)


def test_the_decision_can_be_replayed_and_dry_run(store: Store, tmp_path: Path) -> None:
    from plait.compile import load_graph
    from plait.engine.runtime import Runtime
    from plait.runs.dry_run import dry_run
    from plait.runs.replay import replay

    outcome = run(store, tmp_path, [{"node": "route", "output": {"branch": "bug"}}])
    (route,) = [n for n in store.runs.node_runs(outcome.run_id) if n.node_id == "route"]
    script = tmp_path / "again.yaml"
    script.write_text(yaml.safe_dump({"responses": [{"node": "route", "output": {"branch": "praise"}}]}))
    again = asyncio.run(replay(route, ScriptedProvider.from_file(script)))
    assert again.violations == []
    assert "praise" in again.diff

    dry = asyncio.run(dry_run(load_graph(tmp_path / "triage.yaml"), {"feedback": "Lovely app"}, Runtime(None)))
    decided = next(node for node in dry.nodes if node.node_id == "route")
    assert decided.messages is not None
    assert "Lovely app" in decided.messages[-1]["content"]
    assert decided.response_format is not None
    assert decided.response_format["json_schema"]["schema"]["properties"]["branch"]["enum"] == ["bug", "praise"]
