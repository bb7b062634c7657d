"""Execution semantics (SPEC §3) on small real graphs, recorded in a real store."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.run_input import StartError
from plait.engine.runner import Engine, EngineError, RunOutcome
from plait.llm.scripted import ScriptedProvider, load_script
from plait.llm.types import ChatRequest, ChatResponse
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.store import Store

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def graph_file(tmp_path: Path, nodes: list[dict[str, Any]], edges: list[dict[str, Any]], **extra: Any) -> str:
    data = {"id": "g", "schemas": [{"id": "text", "schema": TEXT}], "nodes": nodes, "edges": edges, **extra}
    path = tmp_path / f"graph_{len(list(tmp_path.glob('graph_*')))}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def script(tmp_path: Path, responses: list[dict[str, Any]]) -> ScriptedProvider:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"responses": responses, "log": "calls.jsonl"}))
    return ScriptedProvider.from_file(path)


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def execute(
    store: Store, graph: str, provider: Any = None, run_input: dict[str, Any] | None = None, **engine_args: Any
) -> RunOutcome:
    run_id = start_run(store, graph, run_input or {})
    engine = Engine(store, provider, **engine_args)

    async def go() -> RunOutcome:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def llm(node_id: str, prompt: str = "go", **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "LLM_CALL", "user_prompt_tpl": prompt, **extra}


def nodes_of(store: Store, run_id: str) -> dict[str, Any]:
    return {n.node_id: n for n in store.runs.node_runs(run_id)}


class _Counting(ScriptedProvider):
    """Counts the calls in flight together (`most`). With `expected`, holds each call until
    that many are in flight: calls made one after another never get there, and the wait (far
    longer than any load makes it) fails the test instead of a clock."""

    expected: int | None = None
    in_flight = most = 0
    all_in: asyncio.Event | None = None

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.all_in = self.all_in or asyncio.Event()
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight == self.expected:
            self.all_in.set()
        try:
            if self.expected is not None:
                await asyncio.wait_for(self.all_in.wait(), timeout=60)
            return await super().complete(request)
        finally:
            self.in_flight -= 1


def counting(tmp_path: Path, responses: list[dict[str, Any]], expected: int | None = None) -> _Counting:
    script(tmp_path, responses)
    path = tmp_path / "script.yaml"
    provider = _Counting(load_script(path), source=path)
    provider.expected = expected
    return provider


def test_independent_branches_run_concurrently(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [llm("a"), llm("b"), llm("c"), {"id": "m", "type": "MERGE"}],
        [
            {"source": "a", "target": "m", "schema_id": "text"},
            {"source": "b", "target": "m", "schema_id": "text"},
            {"source": "c", "target": "m", "schema_id": "text"},
        ],
    )
    provider = counting(tmp_path, [{"output": {"text": "x"}}], expected=3)
    outcome = execute(store, graph, provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert outcome.output == {"a": {"text": "x"}, "b": {"text": "x"}, "c": {"text": "x"}}
    assert provider.most == 3, "the three independent calls were not in flight together"


def test_invalid_answer_is_retried_with_the_errors_fed_back(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a", max_retries=2)], [{"source": "a", "target": "END", "schema_id": "text"}])
    provider = script(
        tmp_path,
        [
            {"node": "a", "match": "Your answer was not valid", "output": {"text": "fixed"}},
            {"node": "a", "output": {"txt": "wrong key"}},
        ],
    )
    outcome = execute(store, graph, provider)
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"text": "fixed"}
    node = nodes_of(store, outcome.run_id)["a"]
    assert len(node.attempts) == 2
    assert any("'text' is a required property" in v for v in node.attempts[0]["violations"])
    assert node.output == {"text": "fixed", "_schema_id": "text", "_schema_version": "1.0.0"}


def test_a_node_that_never_validates_fails_the_run_and_nothing_downstream_runs(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path, [llm("a", max_retries=1), llm("b")], [{"source": "a", "target": "b", "schema_id": "text"}]
    )
    provider = script(tmp_path, [{"node": "a", "text": "not json at all"}, {"node": "b", "output": {"text": "b"}}])
    outcome = execute(store, graph, provider)
    assert outcome.status == RunStatus.FAILED
    assert outcome.error is not None
    assert outcome.error["node_id"] == "a"
    nodes = nodes_of(store, outcome.run_id)
    assert set(nodes) == {"a"}
    assert nodes["a"].status == "failed"
    assert nodes["a"].output is None
    assert nodes["a"].error["last_output"] == "not json at all"
    assert "not JSON" in nodes["a"].error["details"][0]
    assert len(nodes["a"].attempts) == 2
    assert [c["node"] for c in calls(tmp_path)] == ["a", "a"]


@pytest.mark.parametrize("fault", [429, 500, "malformed"])
def test_provider_faults_are_retried_then_fail_cleanly(store: Store, tmp_path: Path, fault: Any) -> None:
    graph = graph_file(tmp_path, [llm("a", max_retries=1)], [{"source": "a", "target": "END", "schema_id": "text"}])
    outcome = execute(store, graph, script(tmp_path, [{"error": fault}]))
    assert outcome.status == RunStatus.FAILED
    assert len(nodes_of(store, outcome.run_id)["a"].attempts) == 2


def test_timeouts_never_hang(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a", timeout_s=0.2)], [{"source": "a", "target": "END", "schema_id": "text"}])
    started = time.perf_counter()
    outcome = execute(store, graph, script(tmp_path, [{"output": {"text": "late"}, "delay_ms": 60_000}]))
    assert outcome.status == RunStatus.FAILED
    assert time.perf_counter() - started < 30  # the call alone would take 60 s
    assert nodes_of(store, outcome.run_id)["a"].error["kind"] == "timeout"


def test_unmatched_call_names_the_node(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("lonely")], [])
    outcome = execute(store, graph, script(tmp_path, [{"node": "other", "text": "x"}]))
    assert outcome.status == RunStatus.FAILED
    assert "no scripted response matches node 'lonely'" in nodes_of(store, outcome.run_id)["lonely"].error["message"]


def test_condition_skips_the_other_branch_and_skipping_propagates(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [
            {"id": "route", "type": "CONDITION", "condition_expr": "input.n > 10"},
            {"id": "big", "type": "TRANSFORM", "transform_expr": "({text: 'big'})"},
            {"id": "small", "type": "TRANSFORM", "transform_expr": "({text: 'small'})"},
            {"id": "after_small", "type": "TRANSFORM", "transform_expr": "({text: current.text + '!'})"},
            {"id": "join", "type": "MERGE"},
        ],
        [
            {"source": "route", "target": "big", "condition_key": True},
            {"source": "route", "target": "small", "condition_key": False},
            {"source": "small", "target": "after_small", "schema_id": "text"},
            {"source": "big", "target": "join", "schema_id": "text"},
            {"source": "after_small", "target": "join", "schema_id": "text"},
        ],
    )
    outcome = execute(store, graph, run_input={"n": 42})
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"big": {"text": "big"}}
    statuses = {n: r.status for n, r in nodes_of(store, outcome.run_id).items()}
    assert statuses == {
        "route": "completed",
        "big": "completed",
        "small": "skipped",
        "after_small": "skipped",
        "join": "completed",
    }
    small = execute(store, graph, run_input={"n": 1})
    assert small.output == {"after_small": {"text": "small!"}}


def test_transform_output_is_checked_against_its_out_edge_schema(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [{"id": "t", "type": "TRANSFORM", "transform_expr": "({text: 42})"}],
        [{"source": "t", "target": "END", "schema_id": "text"}],
    )
    outcome = execute(store, graph)
    assert outcome.status == RunStatus.FAILED
    node = nodes_of(store, outcome.run_id)["t"]
    assert node.error["kind"] == "schema"
    assert node.output is None


def test_data_is_inserted_as_data_never_as_template(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a", "Q: {{ input.q }} / %input.q%")], [])
    provider = script(tmp_path, [{"text": "ok"}])
    outcome = execute(store, graph, provider, {"q": "{{ input.secret }} %input.secret% 100%"})
    prompt = nodes_of(store, outcome.run_id)["a"].input_snapshot["rendered_user_prompt"]
    assert prompt == "Q: {{ input.secret }} %input.secret% 100% / {{ input.secret }} %input.secret% 100%"


def test_objects_render_as_lines_and_context_max_chars_truncates(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a", "{{ input.obj }} {{ input.long }}", context_max_chars=40)], [])
    outcome = execute(store, graph, script(tmp_path, [{"text": "ok"}]), {"obj": {"k": [1, 2]}, "long": "x" * 100})
    snapshot = nodes_of(store, outcome.run_id)["a"].input_snapshot
    # 9 characters of `key: value`, then 31 of the 100 x's fit the 40-character budget
    assert snapshot["rendered_user_prompt"] == "k: [1, 2] " + "x" * 31 + "…[truncated 69 chars]"
    assert snapshot["truncated_chars"] == 69


def test_snapshot_records_prompts_format_context_and_hand_off_state(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [llm("a", "{{ input.t }}", system_prompt="Be brief."), llm("b", "{{ a.text }}")],
        [{"source": "a", "target": "b", "schema_id": "text"}],
    )
    provider = script(tmp_path, [{"node": "a", "output": {"text": "from a"}}, {"node": "b", "text": "done"}])
    outcome = execute(store, graph, provider, {"t": "hello"})
    snap = nodes_of(store, outcome.run_id)["b"].input_snapshot
    assert snap["rendered_user_prompt"] == "from a"
    assert snap["response_format"] is None
    assert snap["context_slice"] == {"a": {"text": "from a"}}
    assert snap["state"] == {"current_node_id": "b", "current": {"text": "from a"}, "predecessors": ["a"]}
    first = nodes_of(store, outcome.run_id)["a"].input_snapshot
    assert first["rendered_system_prompt"] == "Be brief."
    assert first["response_format"]["json_schema"]["schema"] == TEXT
    assert first["state"]["current"] == {"t": "hello"}


def test_input_not_matching_input_schema_is_refused_before_anything_runs(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [llm("a")],
        [],
        input_schema={"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}},
    )
    with pytest.raises(StartError) as info:
        start_run(store, graph, {"q": 5})
    assert "q: 5 is not of type 'string'" in info.value.details[0]
    assert store.runs.list() == []


def test_llm_graph_without_provider_is_refused(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a")], [])
    with pytest.raises(EngineError, match="no provider"):
        execute(store, graph)
    (run,) = store.runs.list()
    assert (run.status, run.lease_owner, run.started_at) == ("failed", None, None), "refused before it started"
    assert run.error is not None
    assert "no provider" in run.error["message"]  # never left pending: `plait serve` would retry it forever
    assert store.runs.node_runs(run.id) == []


def test_runs_started_together_execute_nodes_before_all_are_set_up(store: Store, tmp_path: Path) -> None:
    """Run set-up is admitted a few runs at a time, so the first model calls are in flight while
    later runs are still being set up (instead of every run's set-up going first)."""
    graph = graph_file(tmp_path, [llm("a")], [])
    run_ids = [start_run(store, graph, {}) for _ in range(12)]
    order: list[str] = []
    engine = Engine(store, script(tmp_path, [{"text": "x", "delay_ms": 20}]), start_concurrency=2)
    engine.events.subscribe(lambda event: order.append(f"{type(event).__name__} {run_ids.index(event.run_id)}"))

    async def go() -> list[RunOutcome]:
        try:
            return await asyncio.gather(*(engine.run(r) for r in run_ids))
        finally:
            await engine.aclose()

    assert all(o.status == RunStatus.COMPLETED for o in asyncio.run(go()))
    assert order.index("NodeStarted 0") < order.index("RunStarted 11")
    assert sorted(e for e in order if e.startswith("RunCompleted")) == sorted(f"RunCompleted {i}" for i in range(12))


def test_same_graph_file_reuses_its_stored_version(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [{"id": "t", "type": "TRANSFORM", "transform_expr": "({text: 'x'})"}], [])
    first, second = execute(store, graph), execute(store, graph)
    assert store.runs.get(first.run_id).graph_version == store.runs.get(second.run_id).graph_version == 1


def test_a_finished_run_is_not_executed_again(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a")], [])
    provider = script(tmp_path, [{"text": "once"}])
    outcome = execute(store, graph, provider)
    engine = Engine(store, provider)
    again = asyncio.run(engine.run(outcome.run_id))
    assert again.status == RunStatus.COMPLETED
    assert len(calls(tmp_path)) == 1


def test_llm_concurrency_limit_is_respected(store: Store, tmp_path: Path) -> None:
    nodes = [llm(f"n{i}") for i in range(6)]
    graph = graph_file(tmp_path, nodes, [{"source": n["id"], "target": "END"} for n in nodes])
    provider = counting(tmp_path, [{"text": "x", "delay_ms": 200}])
    outcome = execute(store, graph, provider, llm_concurrency=2)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    assert provider.most == 2, f"{provider.most} calls were in flight at once; the limit is 2"


def test_lease_is_renewed_while_a_long_node_runs(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [{"id": "w", "type": "WAIT", "delay_s": 1.2}], [])
    run_id = start_run(store, graph, {})
    engine = Engine(store, None, lease_ttl_s=0.3)  # renewed every 0.1 s from a worker thread

    async def go() -> tuple[RunOutcome, bool]:
        task = asyncio.create_task(engine.run(run_id))
        await asyncio.sleep(0.8)  # well past the first lease's expiry
        rival = Engine(store, None)
        stolen = store.runs.acquire_lease(run_id, rival.owner, 5)
        return await task, stolen

    outcome, stolen = asyncio.run(go())
    assert outcome.status == RunStatus.COMPLETED
    assert not stolen, "the lease expired while its engine was still running the node"


def test_an_expression_that_aborts_v8_fails_its_node_not_the_engine(store: Store, tmp_path: Path) -> None:
    fatal = graph_file(
        tmp_path, [{"id": "t", "type": "TRANSFORM", "transform_expr": "'x'.repeat(2 ** 28).split('')"}], []
    )
    fine = graph_file(tmp_path, [{"id": "t", "type": "TRANSFORM", "transform_expr": "({text: 'still here'})"}], [])
    engine = Engine(store, None)

    async def both() -> tuple[RunOutcome, RunOutcome]:
        try:
            return await engine.run(start_run(store, fatal, {})), await engine.run(start_run(store, fine, {}))
        finally:
            await engine.aclose()

    crashed, after = asyncio.run(both())
    assert crashed.status == RunStatus.FAILED
    (node,) = store.runs.node_runs(crashed.run_id)
    # The sandbox child's OS memory limit stops the 256 MB string before V8's size check aborts.
    assert "memory limit of 64 MB" in node.error["message"]  # type: ignore[index]
    assert (after.status, after.output) == (RunStatus.COMPLETED, {"text": "still here"})


def test_one_engine_refuses_to_drive_a_run_it_is_driving_already(store: Store, tmp_path: Path) -> None:
    graph = graph_file(tmp_path, [llm("a")], [{"source": "a", "target": "END", "schema_id": "text"}])
    run_id = start_run(store, graph, {})
    engine = Engine(store, script(tmp_path, [{"output": {"text": "x"}, "delay_ms": 300}]))

    async def go() -> list[Any]:
        try:
            first = asyncio.create_task(engine.run(run_id))
            await asyncio.sleep(0.1)  # the first call holds the run
            return await asyncio.gather(first, engine.run(run_id), return_exceptions=True)
        finally:
            await engine.aclose()

    first, second = asyncio.run(go())
    assert isinstance(first, RunOutcome)
    assert first.status == RunStatus.COMPLETED
    assert isinstance(second, EngineError)
    assert "being executed by this engine already" in str(second)
    assert [n.claims for n in store.runs.node_runs(run_id)] == [1]
