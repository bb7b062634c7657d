"""Expressions evaluated ahead: a claimed TRANSFORM or CONDITION starts evaluating while the
commit that claims it is written, and uses that value only when what it sees is still what the
early evaluation was given; a correction taken up in between makes it evaluate again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.ahead import taken_ahead
from plait.engine.compiled import load_compiled
from plait.engine.events import Event
from plait.engine.runner import Engine, RunOutcome
from plait.engine.state import Ahead, RunState
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, Usage
from plait.model.enums import DownstreamPolicy, RunStatus
from plait.runs.corrections import Corrections
from plait.runs.start import start_run
from plait.sandbox import JsSandbox
from plait.store import Store
from tests.runs.test_corrections import drive_with

Evaluations = list[tuple[str, bool]]


@pytest.fixture
def evaluations(monkeypatch: pytest.MonkeyPatch) -> Evaluations:
    """Every evaluation the sandbox is asked for: the expression, and whether it was ahead."""
    seen: Evaluations = []
    original = JsSandbox.aevaluate

    async def recorded(self: JsSandbox, expression: str, scope: Any, **options: Any) -> Any:
        seen.append((expression, bool(options.get("ahead"))))
        return await original(self, expression, scope, **options)

    monkeypatch.setattr(JsSandbox, "aevaluate", recorded)
    return seen


def write(tmp_path: Path, graph: dict[str, Any]) -> str:
    path = tmp_path / f"{graph['id']}.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    return str(path)


def test_a_chain_evaluates_each_node_once_and_every_successor_ahead(tmp_path: Path, evaluations: Evaluations) -> None:
    # calls: these go to an evaluator process (a plain expression is computed when its node runs)
    nodes = [{"id": "n0", "type": "TRANSFORM", "transform_expr": "({n: Math.abs(input.n) + 1})"}]
    nodes += [
        {"id": f"n{i}", "type": "TRANSFORM", "transform_expr": f"({{n: Math.abs(current.n) + {i + 1}}})"}
        for i in (1, 2)
    ]
    nodes += [{"id": "pick", "type": "CONDITION", "condition_expr": "Math.abs(nodes.n2.n) > 5"}]
    nodes += [{"id": "big", "type": "TRANSFORM", "transform_expr": "({n: nodes.n2.n * 10})"}]
    nodes += [{"id": "small", "type": "TRANSFORM", "transform_expr": "({n: Math.abs(0)})"}]
    edges = [{"source": a, "target": b} for a, b in (("n0", "n1"), ("n1", "n2"), ("n2", "pick"))]
    edges += [
        {"source": "pick", "target": "big", "condition_key": "true"},
        {"source": "pick", "target": "small", "condition_key": "false"},
    ]
    path = write(tmp_path, {"id": "chain", "nodes": nodes, "edges": edges})
    with Store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        outcome = drive_with(store, start_run(store, path, {"n": 0}), None)
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"big": {"n": 60}}  # 0 +1 +2 +3 = 6, then * 10
    by_expression = {node["id"]: node.get("transform_expr") or node.get("condition_expr") for node in nodes}
    order = [next(i for i, e in by_expression.items() if e == expression) for expression, _ in evaluations]
    assert order == ["n0", "n1", "n2", "pick", "big"]  # each once: the value evaluated ahead was taken
    assert [ahead for _, ahead in evaluations] == [False, True, True, True, True]


class Held(Provider):
    """Answers once the test lets it: a model call during which a person corrects the run."""

    name = "held"

    def __init__(self, content: str) -> None:
        self.content = content
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.asked.set()
        await self.answer.wait()
        return ChatResponse(content=self.content, usage=Usage(5, 2), provider="held", model="m")


def corrected_while_held(
    store: Store,
    run_id: str,
    node_id: str,
    value: Any,
    *,
    content: str,
    policy: DownstreamPolicy = DownstreamPolicy.INVALIDATE,
    after: tuple[type[Event], str | None] | None = None,
) -> RunOutcome:
    """Execute the run on a `Held` model answering `content`. Once the model is asked (and, with
    `after`, the engine emitted that (class, node) event), a person overrides `node_id` with
    `value` under `policy`; then the model answers and the run goes on to its end."""
    provider = Held(content)
    engine = Engine(store, provider)
    seen = asyncio.Event()
    if after is None:
        seen.set()
    else:
        engine.events.subscribe(lambda event: seen.set() if (type(event), event.node_id) == after else None)

    async def go() -> RunOutcome:
        try:
            running = asyncio.create_task(engine.run(run_id))
            await asyncio.wait_for(asyncio.gather(provider.asked.wait(), seen.wait()), 60)
            await asyncio.to_thread(Corrections(store).override, run_id, node_id, value, policy=policy)
            provider.answer.set()
            return await running
        finally:
            await engine.aclose()

    return asyncio.run(go())


def test_a_correction_taken_up_before_the_node_runs_makes_it_evaluate_again(
    tmp_path: Path, evaluations: Evaluations
) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}
    graph = {
        "id": "corrected",
        "schemas": [{"id": "v", "schema": schema}],
        "nodes": [
            {"id": "source", "type": "TRANSFORM", "transform_expr": "({v: 'old'})"},
            {"id": "draft", "type": "LLM_CALL", "user_prompt_tpl": "Draft from {{ nodes.source.v }}"},
            {"id": "final", "type": "TRANSFORM", "transform_expr": "({v: [current.v, nodes.source.v].join(' on ')})"},
        ],
        "edges": [
            {"source": "source", "target": "draft", "schema_id": "v"},
            {"source": "draft", "target": "final", "schema_id": "v"},
            {"source": "final", "target": "END", "schema_id": "v"},
        ],
    }
    with Store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        run_id = start_run(store, write(tmp_path, graph), {})
        # while `draft` is in flight, a person corrects `source`
        outcome = corrected_while_held(
            store, run_id, "source", {"v": "new"}, content='{"v": "drafted"}', policy=DownstreamPolicy.KEEP
        )
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"v": "drafted on new"}  # `final` read the corrected `source`
    finals = [ahead for expression, ahead in evaluations if "current.v" in expression]
    assert finals == [True, False]  # started ahead on the old value, then evaluated again


def test_only_the_very_same_values_count_as_what_the_evaluation_was_given(tmp_path: Path) -> None:
    path = write(tmp_path, {"id": "one", "nodes": [{"id": "t", "type": "TRANSFORM", "transform_expr": "current"}]})
    with Store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        record = store.runs.get(start_run(store, path, {}))
        state = RunState(load_compiled(store, record.graph_id, record.graph_version, record.body), record.input)
    node = state.nodes["t"].node
    value = {"n": 1}

    async def check() -> list[bool]:
        task = asyncio.ensure_future(asyncio.sleep(0, "done"))
        found = []
        for expression, scope in [
            ("current", {"input": {}, "nodes": {"a": value}, "current": value}),  # the same objects
            ("current", {"input": {}, "nodes": {"a": {"n": 1}}, "current": value}),  # equal, not the same
            ("current", {"input": {}, "nodes": {"a": {"n": True}}, "current": value}),  # 1 == True in Python
            ("other", {"input": {}, "nodes": {"a": value}, "current": value}),  # another expression
        ]:
            given = {"input": {}, "nodes": {"a": value}, "current": value}
            state.ahead["t"] = Ahead("current", given, task)
            found.append(taken_ahead(state, node, expression, scope) is task)
            assert "t" not in state.ahead  # taken once, whatever the answer
        await task
        return found

    assert asyncio.run(check()) == [True, False, False, False]


def test_a_scope_that_cannot_be_built_ahead_fails_only_the_node_itself(
    tmp_path: Path, evaluations: Evaluations, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building what the next node sees can fail (a render budget, a bug): the node that just
    finished is recorded as it was, and the next one evaluates when it runs."""
    from plait.engine import ahead

    def broken(state: Any, node: Any) -> Any:
        raise RuntimeError("no scope here")

    monkeypatch.setattr(ahead, "js_scope", broken)
    nodes = [{"id": f"n{i}", "type": "TRANSFORM", "transform_expr": f"({{n: Math.abs({i})}})"} for i in range(3)]
    edges = [{"source": "n0", "target": "n1"}, {"source": "n1", "target": "n2"}]
    path = write(tmp_path, {"id": "plain", "nodes": nodes, "edges": edges})
    with Store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        outcome = drive_with(store, start_run(store, path, {}), None)
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"n": 2}
    assert [ahead for _, ahead in evaluations] == [False, False, False]


def test_a_plain_expression_is_computed_in_the_engine_without_a_process(
    tmp_path: Path, evaluations: Evaluations, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An expression that only reads its scope (`plait.sandbox.plain`) needs no evaluator process:
    none is asked, ahead or not, and the value is the one a process gives."""

    async def no_process(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a plain expression was sent to an evaluator process")

    monkeypatch.setattr(JsSandbox, "_arequest", no_process)
    nodes = [{"id": "n0", "type": "TRANSFORM", "transform_expr": "({n: input.n + 1, s: 'n' + input.n})"}]
    nodes += [{"id": "n1", "type": "TRANSFORM", "transform_expr": "({n: current.n + 1, s: current.s})"}]
    nodes += [{"id": "pick", "type": "CONDITION", "condition_expr": "nodes.n1.n > 1"}]
    nodes += [{"id": "big", "type": "TRANSFORM", "transform_expr": "({n: nodes.n1.n, s: nodes.n0.s})"}]
    edges = [{"source": "n0", "target": "n1"}, {"source": "n1", "target": "pick"}]
    edges += [{"source": "pick", "target": "big", "condition_key": "true"}]
    path = write(tmp_path, {"id": "plain_chain", "nodes": nodes, "edges": edges})
    with Store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        outcome = drive_with(store, start_run(store, path, {"n": 0}), None)
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"n": 2, "s": "n0"}
    assert evaluations == []
