"""A run's event history rebuilt from the store, for a client that asks for the events of a
run this server has not watched (it ran before the server started, in another process, or
its buffer was dropped).

The stored node runs say what happened, not every step of how: each activation gives a
`node:start` and the event of how it ended; the run's status gives the final event. Such
events carry `"replayed": true` in their data. Their order follows the stored timestamps.
They are built as they travel, under the names of the events they stand for
(`plait.engine.event_wire`), with the data the store still has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plait.engine.event_wire import wire_name
from plait.engine.events import (
    NodeCompleted,
    NodeFailed,
    NodeSkipped,
    NodeStale,
    NodeStarted,
    NodeWaiting,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunStarted,
)
from plait.model.enums import NodeStatus, RunStatus
from plait.store import NodeRunRecord, RunRecord, Store

_NODE_END = {
    NodeStatus.COMPLETED: NodeCompleted,
    NodeStatus.OVERRIDDEN: NodeCompleted,
    NodeStatus.STALE: NodeCompleted,
    NodeStatus.FAILED: NodeFailed,
}


@dataclass(frozen=True, slots=True)
class Past:
    """One event of a rebuilt history (the log numbers it)."""

    kind: str
    node_id: str | None
    at: float
    data: dict[str, Any] = field(default_factory=dict)


def history(store: Store, run_id: str) -> list[Past]:
    """The events of a run as far as the store tells them (NotFoundError for an unknown run)."""
    run = store.runs.get(run_id)
    nodes = store.runs.node_runs(run_id)
    events: list[Past] = []
    if run.started_at is not None:
        events.append(Past(wire_name(RunStarted), None, run.started_at, {"graph": run.graph_slug}))
    for rec in sorted(nodes, key=lambda r: (r.started_at or r.created_at, r.activation)):
        events.extend(_node_events(rec))
    events.extend(_run_end(run, events[-1].at if events else run.created_at))
    return [Past(e.kind, e.node_id, e.at, {**e.data, "replayed": True}) for e in events]


def _node_events(rec: NodeRunRecord) -> list[Past]:
    if rec.status == NodeStatus.SKIPPED:
        return [Past(wire_name(NodeSkipped), rec.node_id, rec.completed_at or rec.created_at)]
    started = rec.started_at or rec.created_at
    events = [Past(wire_name(NodeStarted), rec.node_id, started, {"activation": rec.activation})]
    ended = rec.completed_at or started
    kind = _NODE_END.get(rec.status)
    if kind is NodeFailed:
        events.append(Past(wire_name(kind), rec.node_id, ended, {"error": rec.error}))
    elif kind is not None:
        output = rec.override if rec.override is not None else rec.output
        usage = {"tokens_input": rec.tokens_input, "tokens_output": rec.tokens_output, "cost_usd": rec.cost_usd}
        events.append(Past(wire_name(kind), rec.node_id, ended, {**usage, "node_run_id": rec.id, "output": output}))
        if rec.status == NodeStatus.STALE:
            events.append(Past(wire_name(NodeStale), rec.node_id, ended))
    elif rec.status == NodeStatus.PENDING and rec.input_snapshot is not None:
        prompt = rec.input_snapshot.get("review_prompt")
        events.append(Past(wire_name(NodeWaiting), rec.node_id, started, {"review_prompt": prompt}))
    return events


def _run_end(run: RunRecord, last: float) -> list[Past]:
    at = run.completed_at or last
    if run.status == RunStatus.COMPLETED:
        return [Past(wire_name(RunCompleted), None, at, {"output": run.output})]
    if run.status == RunStatus.FAILED:
        return [Past(wire_name(RunFailed), (run.error or {}).get("node_id"), at, {"error": run.error})]
    if run.status == RunStatus.CANCELLED:
        return [Past(wire_name(RunCancelled), None, at, {})]
    return []
