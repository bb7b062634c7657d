"""A node's answer as it arrives: deltas coalesced, the object parsed so far, a reset when the
node asks again, and only for the nodes the graph or the caller chose."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from plait.client import Client, events
from plait.compile.builder import GraphBuilder
from plait.engine.streaming import NodeStream
from plait.testing import scripted

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
LONG = " ".join(f"word{i}" for i in range(2_000))


def _graph(*, marked: bool = False) -> GraphBuilder:
    """draft (LLM_CALL) -> shout (TRANSFORM); `marked`: the graph asks to stream draft."""
    g = GraphBuilder("streamed", input_schema={"type": "object", "properties": {"topic": {"type": "string"}}})
    g.schema("text", TEXT)
    g.llm_call("draft", "Write about {{ input.topic }}.", max_retries=2, **({"stream": True} if marked else {}))
    g.transform("shout", "({text: nodes.draft.text.toUpperCase()})")
    return g.edge("draft", "shout", schema_id="text")


def _followed(client: Client, graph: GraphBuilder, stream: Any = None) -> tuple[str, list[events.Event]]:
    run_id = client.start(graph, {"topic": "tea"}, stream=stream)
    return run_id, list(client.events(run_id))


def _of(seen: list[events.Event], kind: type[Any]) -> list[Any]:
    return [e for e in seen if isinstance(e, kind) and e.node_id == "draft"]


def test_a_long_answer_arrives_in_a_few_deltas_that_add_up_to_it(tmp_path: Path) -> None:
    answer = {"text": LONG}
    with Client(tmp_path / "p.db", llm=scripted(nodes={"draft": answer})) as client:
        run_id, seen = _followed(client, _graph(), stream=["draft"])
        deltas = _of(seen, events.NodeDelta)
        # 2,000 words come as 2,000 pieces; what arrives between two deltas goes out as one
        assert 1 <= len(deltas) <= 20
        assert json.loads("".join(d.text for d in deltas)) == answer
        partial = _of(seen, events.NodePartial)
        assert partial
        assert partial[-1].value == answer
        order = [type(e) for e in seen if e.node_id == "draft"]
        assert order.index(events.NodeCompleted) > order.index(events.NodeDelta)
        assert client.wait(run_id).output == {"text": LONG.upper()}


def test_only_the_chosen_nodes_stream(tmp_path: Path) -> None:
    provider = scripted(nodes={"draft": {"text": "hi"}})
    with Client(tmp_path / "p.db", llm=provider) as client:
        _, unasked = _followed(client, _graph())
        assert not _of(unasked, events.NodeDelta)
        _, other = _followed(client, _graph(), stream=["shout"])
        assert not _of(other, events.NodeDelta)
        _, everything = _followed(client, _graph(), stream=True)
        assert _of(everything, events.NodeDelta)
        _, marked = _followed(client, _graph(marked=True))  # the graph asks for it
        assert "".join(d.text for d in _of(marked, events.NodeDelta)) == '{"text": "hi"}'


def test_an_invalid_answer_streamed_is_reset_and_the_second_attempt_is_the_output(tmp_path: Path) -> None:
    provider = scripted({"node": "draft", "output": {"wrong": 1}, "times": 1}, nodes={"draft": {"text": "two"}})
    with Client(tmp_path / "p.db", llm=provider) as client:
        run_id, seen = _followed(client, _graph(), stream=["draft"])
        draft = [e for e in seen if e.node_id == "draft"]
        kinds = [type(e) for e in draft]
        reset = kinds.index(events.NodeStreamReset)
        assert events.NodeDelta in kinds[:reset]
        assert events.NodeDelta in kinds[reset:]
        assert draft[reset].attempt == 2
        after = "".join(e.text for e in draft[reset:] if isinstance(e, events.NodeDelta))
        assert json.loads(after) == {"text": "two"}
        assert client.wait(run_id).output == {"text": "TWO"}


def test_a_stream_that_broke_off_is_asked_again_once_its_clients_were_told(tmp_path: Path) -> None:
    provider = scripted(
        {"node": "draft", "output": {"text": "first answer here"}, "stream_break_after": 5, "times": 1},
        nodes={"draft": {"text": "second"}},
    )
    with Client(tmp_path / "p.db", llm=provider) as client:
        run_id, seen = _followed(client, _graph(), stream=["draft"])
        resets = _of(seen, events.NodeStreamReset)
        assert len(resets) == 1
        assert "broke off" in resets[0].reason
        assert client.wait(run_id).output == {"text": "SECOND"}


def test_a_child_runs_answer_reaches_the_top_level_runs_follower_with_its_path(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    script = f"scripted:{examples / 'scripted' / 'refine_draft.yaml'}"
    with Client(tmp_path / "p.db", llm=script) as client:
        run_id = client.start(examples / "refine_draft.yaml", {"product": "a tea kettle"}, stream=["write"])
        seen = list(client.events(run_id))
        written = [e for e in seen if isinstance(e, events.NodeDelta) and e.node_id == "write"]
        assert written, "the LOOP body's answers did not reach the loop's run"
        children = {e.run_id for e in written}
        assert run_id not in children  # each comes from an iteration's child run ...
        assert {e.path for e in written} == {((run_id, "refine"),)}  # ... under the loop's node
        top = [e for e in seen if e.run_id == run_id]
        assert all(e.path == () for e in top)
        assert client.wait(run_id).status == "completed"


def test_a_field_that_breaks_the_contract_stops_the_call_before_the_rest_is_written(tmp_path: Path) -> None:
    verdict = {
        "type": "object",
        "properties": {"label": {"enum": ["bug", "praise"]}, "reason": {"type": "string"}},
        "required": ["label", "reason"],
    }
    wrong = {"label": "complaint", "reason": LONG}  # the label is wrong long before the reason ends
    g = GraphBuilder("checked", input_schema={"type": "object"})
    g.schema("verdict", verdict)
    g.llm_call("judge", "Label it.", max_retries=2, check_while_streaming=True)
    g.transform("keep", "nodes.judge")
    g.edge("judge", "keep", schema_id="verdict")
    provider = scripted(
        {"node": "judge", "output": wrong, "times": 1}, nodes={"judge": {"label": "bug", "reason": "x"}}
    )
    with Client(tmp_path / "p.db", llm=provider) as client:
        result = client.run(g, {})  # nobody follows it: the check streams the answer for itself
        assert result.output == {"label": "bug", "reason": "x"}
        (judged,) = [n for n in client.get_run(result.run_id).nodes if n.node_id == "judge"]
        first, second = judged.attempts
        assert first["stopped"] is True
        assert any("complaint" in problem for problem in first["violations"])
        assert len(first["content"]) < 200 < len(json.dumps(wrong))  # stopped near the label, not at the end
        assert first["usage"]["output"] > 0  # the tokens written before the stop are counted
        assert "stopped" not in second
        assert judged.tokens_output >= first["usage"]["output"] + second["usage"]["output"]


def test_the_first_piece_goes_out_at_once_and_the_rest_waits_for_its_turn() -> None:
    sent: list[events.Event] = []

    async def pieces() -> None:
        stream = NodeStream(sent.append, "r", "n", parse=True, interval_s=3600)  # the turn never comes here
        for piece in ('{"te', 'xt": "h', "i", '"}'):
            stream.piece(piece)
        assert [e.text for e in sent if isinstance(e, events.NodeDelta)] == ['{"te']  # time to first text: none added
        stream.flush()  # the node's answer is complete: what waited goes out together
        assert [e.text for e in sent if isinstance(e, events.NodeDelta)] == ['{"te', 'xt": "hi"}']
        assert [e.value for e in sent if isinstance(e, events.NodePartial)] == [{"text": "hi"}]
        stream.again("the answer was invalid")
        (reset,) = [e for e in sent if isinstance(e, events.NodeStreamReset)]
        assert (reset.attempt, reset.reason) == (2, "the answer was invalid")

    asyncio.run(pieces())


def test_a_long_answer_of_tiny_fields_is_parsed_a_bounded_number_of_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model told to write 20,000 one-character fields: checking at every field end would parse
    the whole answer each time (the square of its length, on the event loop)."""
    parses: list[int] = []
    real = NodeStream._check_fields
    monkeypatch.setattr(NodeStream, "_check_fields", lambda self: (parses.append(1), real(self))[1])

    async def pieces() -> None:
        stream = NodeStream(lambda _: None, "r", "n", parse=True, check=lambda fields: [], interval_s=3600)
        stream.piece("{")
        for i in range(20_000):
            stream.piece(f'"f{i}": 1, ')

    asyncio.run(pieces())
    assert 1 <= len(parses) <= 20  # the answer doubling each time: about log2 of its pieces
