"""A streaming answer over the event stream: its pieces are not numbered into the replay buffer,
and a client that connects mid-answer gets the text so far, then the rest: the same text."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from api_helpers import read_events

from plait.api.events import ANSWER_CHARS, EventLog
from plait.compile.builder import GraphBuilder
from plait.engine.events import EventBus, NodeCompleted, NodeDelta, NodePartial, NodeStarted, NodeStreamReset
from plait.testing import HttpRuns, served_app

ANSWER = {"text": " ".join(f"word{i}" for i in range(300))}


def test_a_client_connecting_mid_answer_gets_the_text_so_far_and_ids_skip_no_number() -> None:
    log = EventLog(EventBus())
    log.emit(NodeStarted("r", "draft", node_type="LLM_CALL"))
    log.emit(NodeDelta("r", "draft", text='{"text": "wro', attempt=1))
    log.emit(NodeStreamReset("r", "draft", reason="invalid", attempt=2))
    log.emit(NodeDelta("r", "draft", text='{"text": "he', attempt=2))
    log.emit(NodePartial("r", "draft", value={"text": "he"}, attempt=2))
    early, queue = log.listen("r", after=0)
    assert [(e.kind, e.numbered) for e in early] == [
        ("node:start", True),
        ("node:delta", False),
        ("node:partial", False),
    ]
    assert early[1].data == {"text": '{"text": "he', "attempt": 2, "snapshot": True}
    assert early[2].data["value"] == {"text": "he"}
    assert "id" not in early[1].sse()

    log.emit(NodeDelta("r", "draft", text='llo"}', attempt=2))
    live = queue.get_nowait()
    assert (live.kind, live.numbered, live.data["text"]) == ("node:delta", False, 'llo"}')
    log.emit(NodeCompleted("r", "draft", node_run_id="nr", output={"text": "hello"}, tokens_input=1,
                           tokens_output=1, cost_usd=0.0))  # fmt: skip
    late, _ = log.listen("r", after=0)
    assert [(e.id, e.kind) for e in late] == [(1, "node:start"), (2, "node:complete")]  # no snapshot left


def test_a_child_runs_answer_is_shown_on_its_top_level_runs_stream_with_its_path() -> None:
    log = EventLog(EventBus())
    log.open("top")
    _, queue = log.listen("top", after=0)
    under = (("top", "refine"),)
    log.emit(NodeDelta("child", "write", text="Draft", attempt=1, path=under))
    live = queue.get_nowait()
    assert (live.run_id, live.node_id, live.data["text"]) == ("child", "write", "Draft")
    assert live.to_json()["path"] == [{"run_id": "top", "node_id": "refine"}]
    joined, _ = log.listen("top", after=0)
    assert [(e.run_id, e.data["text"], e.data["snapshot"]) for e in joined] == [("child", "Draft", True)]
    log.emit(NodeCompleted("child", "write", node_run_id="n", output={}, tokens_input=0, tokens_output=0,
                           cost_usd=0.0, path=under))  # fmt: skip
    after, _ = log.listen("top", after=0)
    assert after == []  # the child's answer is over; its numbered events stay on the child's stream
    assert [e.kind for e in log.listen("child", after=0)[0]] == ["node:complete"]


def test_the_answers_kept_for_late_clients_are_bounded_and_a_late_client_is_told_what_is_missing() -> None:
    """Answers arriving are kept for clients that connect mid-answer, within a budget for all of
    them: past it the heaviest is no longer kept, and a client connecting then is told its text
    so far is incomplete (the committed output stays the whole answer)."""
    log = EventLog(EventBus(), answer_chars=1_000)
    log.emit(NodeDelta("r", "small", text="x" * 300, attempt=1))
    log.emit(NodeDelta("r", "big", text="y" * 600, attempt=1))
    assert log.answer_chars == 900
    log.emit(NodeDelta("r", "big", text="y" * 200, attempt=1))  # 1,100: the heaviest (big) is let go
    assert log.answer_chars == 300
    log.emit(NodeDelta("r", "big", text="tail", attempt=1))  # not kept any more: still not counted
    assert log.answer_chars == 300
    joined, _ = log.listen("r", after=0)
    shown = {e.node_id: e.data for e in joined}
    assert shown["small"] == {"text": "x" * 300, "attempt": 1, "snapshot": True}
    assert shown["big"] == {"text": "", "attempt": 1, "snapshot": True, "incomplete": True}
    log.emit(NodeStreamReset("r", "big", reason="invalid", attempt=2))  # a new attempt is kept whole again
    log.emit(NodeDelta("r", "big", text="zz", attempt=2))
    assert log.listen("r", after=0)[0][-1].data == {"text": "zz", "attempt": 2, "snapshot": True}
    log.emit(NodeCompleted("r", "big", node_run_id="n", output={}, tokens_input=0, tokens_output=0, cost_usd=0.0))
    log.emit(NodeCompleted("r", "small", node_run_id="m", output={}, tokens_input=0, tokens_output=0, cost_usd=0.0))
    assert log.answer_chars == 0


def test_one_answer_past_its_own_limit_is_not_kept() -> None:
    log = EventLog(EventBus())
    log.emit(NodeDelta("r", "huge", text="h" * (ANSWER_CHARS + 1), attempt=1))
    assert log.answer_chars == 0
    (snapshot,) = log.listen("r", after=0)[0]
    assert snapshot.data["incomplete"] is True


def test_a_run_started_with_stream_sends_its_answer_in_pieces_that_add_up(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    # spread over 6 s, generous for a loaded host: the client below connects while the answer arrives
    answers.write_text(yaml.safe_dump({"responses": [{"node": "draft", "output": ANSWER, "delay_ms": 6000}]}))
    g = GraphBuilder("streamed_http", input_schema={"type": "object"})
    g.schema("text", {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    g.llm_call("draft", "Write.")
    g.transform("done", "({text: nodes.draft.text})")
    g.edge("draft", "done", schema_id="text")
    with served_app(llm=f"scripted:{answers}") as served, served.client() as client:
        assert client.post("/api/graphs", json={"source": g.to_yaml()}).status_code == 201
        started = client.post("/api/runs", json={"graph": "streamed_http", "input": {}, "stream": ["draft"]})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        status, events = read_events(client, run_id)
        assert status == 200
        pieces = [e for e in events if e["event"] == "node:delta"]
        assert pieces, "the answer arrived with no delta: the client connected after it"
        assert json.loads("".join(e["data"]["text"] for e in pieces)) == ANSWER
        numbered = [e["id"] for e in events if e["event"] not in ("node:delta", "node:partial")]
        assert numbered == list(range(1, len(numbered) + 1))
        assert HttpRuns(client).wait_status(run_id, "completed")["status"] == "completed"
