"""A node whose result cannot be stored, or whose processing raises, fails that node alone: the
run ends `failed` with the reason recorded, never stays `running`, and can be rerun. On SQLite
and PostgreSQL (a lone surrogate is refused by both databases' UTF-8 encoders)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from plait.engine import executors
from plait.engine.runtime import NodeResult
from plait.llm.scripted import ScriptedProvider, ScriptFile
from plait.model.enums import NodeStatus, RunStatus
from plait.redact import register
from plait.runs.corrections import Corrections
from plait.store import Store
from plait.store.node_writes import NodeWriter
from plait.store.writes import Finish
from tests.engine.test_engine import graph_file, start_run
from tests.runs.test_corrections import drive, drive_with, newest, tr

LONE = "a\ud800b"


def chain(tmp_path: Path, first: str) -> str:
    """a -> b -> END, `a` running `first`."""
    return graph_file(
        tmp_path,
        [tr("a", first), tr("b", "({text: current.text + '!'})")],
        [{"source": "a", "target": "b", "schema_id": "text"}, {"source": "b", "target": "END", "schema_id": "text"}],
    )


def failed_node(store: Store, run_id: str, node_id: str) -> dict[str, Any]:
    assert store.runs.get(run_id).status == RunStatus.FAILED
    record = newest(store, run_id)[node_id]
    assert record.status == NodeStatus.FAILED
    assert record.error is not None
    return record.error


def test_a_transform_returning_a_lone_surrogate_fails_its_node_naming_the_field(store: Store, tmp_path: Path) -> None:
    run_id = start_run(store, chain(tmp_path, r"({text: 'a\ud800b'})"), {})
    outcome = drive(store, run_id)
    assert outcome.status == RunStatus.FAILED
    error = failed_node(store, run_id, "a")
    assert error["kind"] == "output"
    assert error["path"] == "output.text"
    assert "lone surrogate (U+D800)" in error["message"]
    # what came back is kept, as readable text, in the attempt
    assert newest(store, run_id)["a"].attempts[-1]["result"] == {"text": "a\\ud800b"}
    assert "b" not in newest(store, run_id) or newest(store, run_id)["b"].status != NodeStatus.COMPLETED


def test_a_model_answer_with_a_lone_surrogate_fails_its_node(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [{"id": "m", "type": "LLM_CALL", "user_prompt_tpl": "go"}],
        [{"source": "m", "target": "END", "schema_id": "text"}],
    )
    provider = ScriptedProvider(ScriptFile.model_validate({"responses": [{"output": {"text": LONE}}]}))
    run_id = start_run(store, graph, {})
    assert drive_with(store, run_id, provider).status == RunStatus.FAILED
    error = failed_node(store, run_id, "m")
    assert (error["kind"], error["path"]) == ("output", "output.text")


def test_a_transform_nested_too_deep_fails_its_node(store: Store, tmp_path: Path) -> None:
    deep = "(() => { let v = {text: 'x'}; for (let i = 0; i < 150; i++) v = {text: 'x', v}; return v; })()"
    run_id = start_run(store, chain(tmp_path, deep), {})
    assert drive(store, run_id).status == RunStatus.FAILED
    error = failed_node(store, run_id, "a")
    assert "nested deeper than the limit of 100 levels" in error["message"]


def test_an_executor_that_raises_fails_its_node_as_internal_with_the_traceback(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any) -> NodeResult:
        raise KeyError("no such thing")

    graph = chain(tmp_path, "({text: input.t})")
    run_id = start_run(store, graph, {"t": "x"})
    monkeypatch.setitem(executors.EXECUTORS, executors.NodeType.TRANSFORM, broken)
    assert drive(store, run_id).status == RunStatus.FAILED
    error = failed_node(store, run_id, "a")
    assert error["kind"] == "internal"
    assert "KeyError" in error["message"]
    assert "no such thing" in error["message"]
    assert "Traceback" in error["traceback"]
    assert "broken" in error["traceback"]

    monkeypatch.undo()  # the bug is fixed: a rerun of the node completes the run
    Corrections(store).rerun(run_id, "a", downstream=True)
    assert drive(store, run_id).status == RunStatus.COMPLETED
    assert newest(store, run_id)["b"].effective_output["text"] == "x!"


def test_a_result_the_store_refuses_fails_its_node_instead_of_wedging_the_run(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever makes the database refuse a node's writes (here injected), the node fails with
    kind `internal`, the run ends, and the successors were never claimed."""
    real = NodeWriter._commit

    def refuse_completed_a(self: NodeWriter, units: Any) -> Any:
        for unit in units:
            for write in unit:
                output = json.loads(write.output) if isinstance(write, Finish) and write.output else None
                if isinstance(output, dict) and output.get("text") == "x":  # the engine hands it encoded
                    raise ValueError("the database refused this value")
        return real(self, units)

    monkeypatch.setattr(NodeWriter, "_commit", refuse_completed_a)
    run_id = start_run(store, chain(tmp_path, "({text: input.t})"), {"t": "x"})
    assert drive(store, run_id).status == RunStatus.FAILED
    error = failed_node(store, run_id, "a")
    assert error["kind"] == "internal"
    assert "the database refused this value" in error["message"]
    assert "b" not in newest(store, run_id)  # never claimed: no half-applied successor
    assert drive(store, run_id).status == RunStatus.FAILED  # resuming an ended run does not crash either


def tool_graph(tmp_path: Path, *, routed: bool) -> str:
    """An LLM_CALL whose TRANSFORM_EXPR tool returns a lone surrogate, routed down an edge or not."""
    echo = {
        "name": "echo",
        "handler": "TRANSFORM_EXPR",
        "parameters": {"type": "object", "properties": {}},
        "transform_expr": r"({text: 'a\ud800b'})",
        **({"output_edge_id": "e_tool"} if routed else {}),
    }
    nodes: list[dict[str, Any]] = [{"id": "plan", "type": "LLM_CALL", "user_prompt_tpl": "go", "tools": [echo]}]
    edges = [{"id": "e_out", "source": "plan", "target": "END", "schema_id": "text"}]
    if routed:
        nodes.append(tr("keep", "({text: current.text})"))
        edges.append({"id": "e_tool", "source": "plan", "target": "keep", "schema_id": "text"})
    return graph_file(tmp_path, nodes, edges)


def tool_then_answer() -> ScriptedProvider:
    return ScriptedProvider(
        ScriptFile.model_validate(
            {
                "responses": [
                    {"node": "plan", "tool_calls": [{"name": "echo", "arguments": {}}], "times": 1},
                    {"node": "plan", "output": {"text": "done"}},
                ]
            }
        )
    )


def test_a_tool_result_with_a_lone_surrogate_routed_to_the_output_fails_its_node(store: Store, tmp_path: Path) -> None:
    run_id = start_run(store, tool_graph(tmp_path, routed=True), {})
    assert drive_with(store, run_id, tool_then_answer()).status == RunStatus.FAILED
    error = failed_node(store, run_id, "plan")
    assert error["kind"] == "output"
    assert error["path"].startswith("output._routed")


def test_a_tool_result_with_a_lone_surrogate_is_recorded_as_text(store: Store, tmp_path: Path) -> None:
    """Only sent back to the model, it does not fail the node; its record stays readable."""
    run_id = start_run(store, tool_graph(tmp_path, routed=False), {})
    assert drive_with(store, run_id, tool_then_answer()).status == RunStatus.COMPLETED
    rounds = newest(store, run_id)["plan"].input_snapshot["tool_rounds"]
    assert rounds[0]["calls"][0]["result"] == {"text": "a\\ud800b"}


def test_a_registered_secret_a_node_saw_is_masked_in_its_stored_snapshot_and_attempts(
    store: Store, tmp_path: Path
) -> None:
    """The snapshot and the attempts are masked as they are encoded: a prompt that printed a
    registered value (here from the run's input) is stored with `***`, wherever it sits."""
    secret = f"value-{uuid.uuid4().hex}"
    register(secret)
    graph = graph_file(
        tmp_path,
        [{"id": "m", "type": "LLM_CALL", "user_prompt_tpl": "key: {{ input.key }}"}],
        [{"source": "m", "target": "END", "schema_id": "text"}],
    )
    provider = ScriptedProvider(ScriptFile.model_validate({"responses": [{"output": {"text": "ok"}}]}))
    run_id = start_run(store, graph, {"key": secret})
    assert drive_with(store, run_id, provider).status == RunStatus.COMPLETED
    record = newest(store, run_id)["m"]
    assert record.input_snapshot is not None
    assert record.input_snapshot["rendered_user_prompt"] == "key: ***"
    assert secret not in json.dumps([record.input_snapshot, record.attempts])
