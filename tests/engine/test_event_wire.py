"""Typed events leave the process under the names and payloads clients have always read: every
event class is in the one table, and each goes out exactly as before (key order included)."""

from __future__ import annotations

import inspect
import json

import pytest

from plait.engine import events
from plait.engine.event_wire import WIRE, to_wire
from plait.engine.events import (
    Event,
    NodeCompleted,
    NodeDelta,
    NodeFailed,
    NodeItemEnded,
    NodeOverridden,
    NodePartial,
    NodeQueued,
    NodeRerun,
    NodeReviewed,
    NodeSkipped,
    NodeStale,
    NodeStarted,
    NodeStreamReset,
    NodeWaiting,
    RepairDiagnosing,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunPaused,
    RunResumed,
    RunRolledBack,
    RunStarted,
)

ERROR = {"kind": "schema", "message": "output violates its out-edge schema"}

AS_SENT: list[tuple[Event, str, str]] = [
    (RunStarted("r", graph="g", version=2), "execution.started", '{"graph": "g", "version": 2}'),
    (NodeStarted("r", "a", node_type="LLM_CALL"), "node:start", '{"type": "LLM_CALL"}'),
    (
        NodeCompleted("r", "a", node_run_id="nr", output={"t": "hi"}, tokens_input=3, tokens_output=4, cost_usd=0.5),
        "node:complete",
        '{"node_run_id": "nr", "output": {"t": "hi"}, "tokens_input": 3, "tokens_output": 4, "cost_usd": 0.5}',
    ),
    (NodeFailed("r", "a", error=ERROR), "node:error", json.dumps({"error": ERROR})),
    (NodeWaiting("r", "a", review_prompt="ok?", due_at=None), "run:paused", '{"review_prompt": "ok?", "due_at": null}'),
    (NodeSkipped("r", "a"), "node:skipped", "{}"),
    (NodeStale("r", "a"), "node:stale", "{}"),
    (
        NodeItemEnded("r", "m", index=1, count=3, status="completed", child_run_id="c"),
        "node:item",
        '{"index": 1, "count": 3, "status": "completed", "child_run_id": "c"}',
    ),
    (RepairDiagnosing("r", "a", error_kind="schema"), "node.repair_diagnosing", '{"error_kind": "schema"}'),
    (RunCompleted("r", output={"x": 1}), "workflow:complete", '{"output": {"x": 1}}'),
    (RunFailed("r", "a", error=ERROR), "workflow:error", json.dumps({"error": ERROR})),
    (
        NodeOverridden("r", "a", output=1, policy="KEEP", note=None, by="ann", node_run_id="nr"),
        "node:overridden",
        '{"output": 1, "policy": "KEEP", "note": null, "by": "ann", "node_run_id": "nr"}',
    ),
    (
        NodeRerun("r", "a", downstream=True, by="ann", node_run_id="nr"),
        "node:rerun",
        '{"downstream": true, "by": "ann", "node_run_id": "nr"}',
    ),
    (
        NodeReviewed("r", "a", approved=True, note="fine", by="ann", node_run_id="nr"),
        "node:reviewed",
        '{"approved": true, "note": "fine", "by": "ann", "node_run_id": "nr"}',
    ),
    (
        NodeReviewed("r", "a", approved=False, note=None, output={"t": 1}, by="ann", node_run_id="nr"),
        "node:reviewed",
        '{"approved": false, "note": null, "output": {"t": 1}, "by": "ann", "node_run_id": "nr"}',
    ),
    (
        RunRolledBack("r", None, target="input.topic", to_version=1, cascade=False, by="ann"),
        "run:rolled_back",
        '{"target": "input.topic", "to_version": 1, "cascade": false, "by": "ann"}',
    ),
    (
        RunRolledBack("r", "a", target="a", to_version=2, cascade=True, by="ann", node_run_id="nr"),
        "run:rolled_back",
        '{"target": "a", "to_version": 2, "cascade": true, "by": "ann", "node_run_id": "nr"}',
    ),
    (NodeQueued("r", "a"), "node:queued", "{}"),
    (RunResumed("r", reason="due"), "run:resumed", '{"reason": "due"}'),
    (RunResumed("r", reason="review", by="ann"), "run:resumed", '{"reason": "review", "by": "ann"}'),
    (RunPaused("r", reason="requested"), "run:paused", '{"reason": "requested"}'),
    (RunCancelled("r", error={"kind": "cancelled"}), "run:cancelled", '{"error": {"kind": "cancelled"}}'),
    # streamed answers came with typed events: their payload is their fields
    (NodeDelta("r", "a", text='{"t": "h', attempt=1), "node:delta", '{"text": "{\\"t\\": \\"h", "attempt": 1}'),
    (NodePartial("r", "a", value={"t": "h"}, attempt=1), "node:partial", '{"value": {"t": "h"}, "attempt": 1}'),
    (
        NodeStreamReset("r", "a", reason="invalid", attempt=2),
        "node:stream_reset",
        '{"reason": "invalid", "attempt": 2}',
    ),
]
"""Each event class as the HTTP stream and Redis carry it (as before events were typed, for
the classes that existed then)."""


def _event_classes() -> set[type[Event]]:
    return {
        value
        for _, value in inspect.getmembers(events, inspect.isclass)
        if issubclass(value, Event) and value is not Event
    }


def test_every_event_class_has_a_wire_name_and_an_example() -> None:
    classes = _event_classes()
    assert len(classes) == 22
    assert set(WIRE) == classes
    assert {type(event) for event, _, _ in AS_SENT} == classes


@pytest.mark.parametrize(("event", "name", "data"), AS_SENT, ids=[type(sent[0]).__name__ for sent in AS_SENT])
def test_an_event_travels_under_its_old_name_and_payload(event: Event, name: str, data: str) -> None:
    wire = to_wire(event)
    assert (wire.kind, wire.run_id, wire.node_id, wire.at) == (name, event.run_id, event.node_id, event.at)
    assert json.dumps(wire.data) == data
