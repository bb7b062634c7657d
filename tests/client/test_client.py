"""The Python client: run, follow, correct and read a run, synchronously and async, on the
scripted provider; outcomes as values, misuse as typed refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

import plait
from plait.client import AsyncClient, Client, ClientClosed, OutputMismatch, RunFailed, events
from plait.compile.builder import GraphBuilder
from plait.errors import PlaitError
from plait.model.enums import RunStatus
from plait.store import NotFoundError

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def _graph(review: bool = False) -> GraphBuilder:
    """draft (LLM_CALL) -> [check (HUMAN_REVIEW)] -> shout (TRANSFORM)."""
    g = GraphBuilder("client_demo", input_schema={"type": "object", "properties": {"topic": {"type": "string"}}})
    g.schema("text", TEXT)
    g.llm_call("draft", "Write about {{ input.topic }}.")
    last = "draft"
    if review:
        g.node("check", "HUMAN_REVIEW", review_prompt="Is it right?")
        g.edge("draft", "check", schema_id="text")
        last = "check"
    g.transform("shout", f"({{text: nodes.{last}.text.toUpperCase()}})")
    return g.edge(last, "shout", schema_id="text")


def _script(tmp_path: Path, *responses: dict[str, Any]) -> str:
    path = tmp_path / "answers.yaml"
    path.write_text(yaml.safe_dump({"responses": list(responses) or [{"node": "draft", "output": {"text": "hi"}}]}))
    return f"scripted:{path}"


def test_a_run_completes_and_is_the_record_every_surface_reads(tmp_path: Path) -> None:
    db = str(tmp_path / "p.db")
    with Client(db, llm=_script(tmp_path)) as client:
        result = client.run(_graph(), {"topic": "tea"})
        assert result.ok
        assert result.output == {"text": "HI"}
        view = client.get_run(result.run_id)
        assert view.run.status == RunStatus.COMPLETED
        assert sorted(view.current) == ["draft", "shout"]
        assert [r.id for r in client.list_runs()] == [result.run_id]
    from plait.store import Store

    store = Store(db)  # a new process's view: the same record
    try:
        assert store.runs.get(result.run_id).output == {"text": "HI"}
    finally:
        store.close()


def test_start_then_events_misses_nothing_and_wait_returns_the_result(tmp_path: Path) -> None:
    with Client(tmp_path / "p.db", llm=_script(tmp_path)) as client:
        run_id = client.start(_graph(), {"topic": "tea"})
        seen = list(client.events(run_id))
        kinds = [(events.name(e), e.node_id) for e in seen]
        assert kinds[0] == ("execution.started", None)
        drafted = [e for e in seen if isinstance(e, events.NodeCompleted) and e.node_id == "draft"]
        assert [e.output["text"] for e in drafted] == ["hi"]
        assert ("node:complete", "draft") in kinds
        assert kinds[-1] == ("workflow:complete", None)
        assert client.wait(run_id).output == {"text": "HI"}
        again = [events.name(e) for e in client.events(run_id)]  # a run that ended: its events, replayed
        assert again == [k for k, _ in kinds]


def test_a_failed_run_is_a_value_with_the_nodes_reason_in_python_words(tmp_path: Path) -> None:
    llm = _script(tmp_path, {"node": "draft", "output": {"wrong": 1}})
    with Client(tmp_path / "p.db", llm=llm) as client:
        result = client.run(_graph(), {"topic": "tea"})
        assert result.status == RunStatus.FAILED
        assert result.output is None
        assert result.failure is not None
        assert result.failure.node_id == "draft"
        assert result.failure.kind == "schema"
        assert f'client.rerun("{result.run_id}", "draft")' in result.failure.hint
        assert "plait rerun" not in result.failure.hint
        with pytest.raises(RunFailed, match="failed at node 'draft'"):
            result.raise_for_status()


def test_a_review_pauses_the_run_and_answering_it_continues_there(tmp_path: Path) -> None:
    with Client(tmp_path / "p.db", llm=_script(tmp_path)) as client:
        paused = client.run(_graph(review=True), {"topic": "tea"})
        assert paused.status == RunStatus.PAUSED
        assert [(r.node_id, r.prompt, r.value) for r in paused.reviews] == [("check", "Is it right?", {"text": "hi"})]
        with pytest.raises(PlaitError, match="either approve=True or a corrected value"):
            client.review(paused.run_id, "check")
        answered = client.review(paused.run_id, "check", {"text": "fixed"}, note="better")
        assert answered.result is not None
        assert answered.result.output == {"text": "FIXED"}


def test_an_override_with_rerun_executes_the_downstream_and_keeps_the_original(tmp_path: Path) -> None:
    with Client(tmp_path / "p.db", llm=_script(tmp_path)) as client:
        run_id = client.run(_graph(), {"topic": "tea"}).run_id
        corrected = client.override(run_id, "draft", {"text": "better"}, policy="RERUN", note="tone")
        assert corrected.queued == ["shout"]
        assert corrected.result is not None
        assert corrected.result.output == {"text": "BETTER"}
        versions = client.ledger(run_id, "draft")
        assert [v.value["text"] for v in versions][-2:] == ["hi", "better"]
        assert client.check(run_id).consistent
        with pytest.raises(PlaitError) as refused:
            client.override(run_id, "draft", {"nope": 1})
        assert refused.value.kind == "invalid"


def test_typed_output_and_a_mismatch(tmp_path: Path) -> None:
    class Text(BaseModel):
        text: str

    class Other(BaseModel):
        count: int

    with Client(tmp_path / "p.db", llm=_script(tmp_path)) as client:
        typed = client.run(_graph(), {"topic": "tea"}, output_type=Text)
        assert typed.output == Text(text="HI")
        with pytest.raises(OutputMismatch, match="is not a Other"):
            client.run(_graph(), {"topic": "tea"}, output_type=Other)


def test_misuse_raises_plait_errors(tmp_path: Path) -> None:
    client = Client(tmp_path / "p.db", llm=_script(tmp_path))
    with pytest.raises(NotFoundError):
        client.get_run("no-such-run")
    finished = client.run(_graph(), {"topic": "tea"}).run_id
    assert list(client.events(finished)) == []  # stopped, and not started to be followed: nothing to give
    graph_id = client.save_graph(_graph()).graph_id
    run_id = client.store.runs.add(graph_id=graph_id, graph_version=1, schema_version="1.0.0", input={"topic": "x"})
    finished = client.run(_graph(), {"topic": "tea"}).run_id
    assert list(client.events(finished)) == []  # stopped, and not started to be followed: nothing to give
    graph_id = client.save_graph(_graph()).graph_id
    run_id = client.store.runs.add(graph_id=graph_id, graph_version=1, schema_version="1.0.0", input={"topic": "x"})
    with pytest.raises(PlaitError, match="not executing in this client") as elsewhere:
        list(client.events(run_id))
    assert elsewhere.value.code == "not_executing_here"
    client.close()
    with pytest.raises(ClientClosed):
        client.list_runs()


def test_the_async_client_and_the_blocking_one_inside_a_running_loop(tmp_path: Path) -> None:
    llm = _script(tmp_path)

    async def main() -> tuple[Any, Any]:
        async with AsyncClient(tmp_path / "a.db", llm=llm) as client:
            run_id = await client.start(_graph(), {"topic": "tea"})
            seen = [events.name(e) async for e in client.events(run_id)]
            done = await client.wait(run_id)
        with Client(tmp_path / "b.db", llm=llm) as blocking:  # as in Jupyter: a loop is running here
            inside = blocking.run(_graph(), {"topic": "tea"})
        return (seen, done), inside

    (seen, done), inside = asyncio.run(main())
    assert seen[-1] == "workflow:complete"
    assert done.output == {"text": "HI"}
    assert inside.output == {"text": "HI"}


def test_plait_run_is_one_call(tmp_path: Path) -> None:
    result = plait.run(_graph(), {"topic": "tea"}, llm=_script(tmp_path), db=tmp_path / "p.db")
    assert isinstance(result, plait.RunResult)
    assert result.output == {"text": "HI"}


def test_wait_follows_a_run_another_process_executes(tmp_path: Path) -> None:
    db, llm = tmp_path / "p.db", _script(tmp_path)
    with Client(db, llm=llm) as starter, Client(db, llm=llm) as watcher:
        run_id = starter.start(_graph(), {"topic": "tea"})
        assert watcher.wait(run_id, timeout=120).output == {"text": "HI"}


def test_graphs_are_saved_forked_merged_and_exported(tmp_path: Path) -> None:
    with Client(tmp_path / "p.db", llm=_script(tmp_path)) as client:
        saved = client.save_graph(_graph())
        assert (saved.slug, saved.version, saved.created) == ("client_demo", 1, True)
        assert client.save_graph(_graph()).created is False  # unchanged: no new version
        fork = client.fork("client_demo", "client_demo_mine")
        changed = _graph()
        changed.node("extra", "TRANSFORM", transform_expr="1").edge("shout", "extra")
        client.save_graph(changed)
        diff = client.fork_diff(fork.slug)
        keys = [item.key for item in diff.items]
        assert "extra" in keys
        merged = client.merge(fork.slug, keys)
        assert "extra" in [n.id for n in merged.graph.nodes]
        with pytest.raises(PlaitError, match="not both"):
            client.merge(fork.slug, keys, refork=True)
        exported = client.export_graph("client_demo")
        assert yaml.safe_load(exported)["id"] == "client_demo"
        assert [v.version for v in client.graph_versions("client_demo")] == [1, 2]
