"""The events `Client.events` yields: one class per thing that happens to a run.

Match on the class (`isinstance(event, events.NodeCompleted)`); `name(event)` is the name
the same event has on the HTTP event stream and in `plait runs events`, for code that
already reads those. Every event has `run_id`, `node_id` (None: the run as a whole) and `at`.
"""

from __future__ import annotations

from plait.engine.event_wire import wire_name
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

__all__ = [
    "Event",
    "NodeCompleted",
    "NodeDelta",
    "NodeFailed",
    "NodeItemEnded",
    "NodeOverridden",
    "NodePartial",
    "NodeQueued",
    "NodeRerun",
    "NodeReviewed",
    "NodeSkipped",
    "NodeStale",
    "NodeStarted",
    "NodeStreamReset",
    "NodeWaiting",
    "RepairDiagnosing",
    "RunCancelled",
    "RunCompleted",
    "RunFailed",
    "RunPaused",
    "RunResumed",
    "RunRolledBack",
    "RunStarted",
    "name",
]


def name(event: Event) -> str:
    """The event's name outside the process (`"node:complete"` for a `NodeCompleted`)."""
    return wire_name(type(event))
