"""A run's events as they leave the process: the name and JSON payload each event class has on
the HTTP event stream (SSE), over Redis between workers and servers, and in the CLI's progress.

`WIRE` is the one table from class to name; clients have read these names and payloads since
before events were typed, so a payload is the event's own fields in their order, under their
names, except where the table says otherwise. docs/http.md lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

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
    RunPath,
    RunPaused,
    RunResumed,
    RunRolledBack,
    RunStarted,
)


@dataclass(frozen=True, slots=True)
class WireEvent:
    """An event as it travels: its name (`kind`), its run and node, its JSON `data`, its time."""

    kind: str
    run_id: str
    node_id: str | None
    data: dict[str, Any]
    at: float
    path: RunPath = ()
    """For an event of a child run, the nodes above it (`Event.path`)."""


@dataclass(frozen=True, slots=True)
class Wire:
    """How one event class travels: its name, and its payload when it is not its own fields."""

    name: str
    data: Callable[[Any], dict[str, Any]] | None = None


def _reviewed(event: NodeReviewed) -> dict[str, Any]:
    """A corrected value only: an approval carries no `output`."""
    said = {"approved": event.approved, "note": event.note}
    if not event.approved:
        said["output"] = event.output
    return {**said, "by": event.by, "node_run_id": event.node_run_id}


def _rolled_back(event: RunRolledBack) -> dict[str, Any]:
    """A rollback of the run input names no node run."""
    said = {"target": event.target, "to_version": event.to_version, "cascade": event.cascade, "by": event.by}
    return said if event.node_id is None else {**said, "node_run_id": event.node_run_id}


def _resumed(event: RunResumed) -> dict[str, Any]:
    """Only an answered review says who."""
    return {"reason": event.reason} if event.by is None else {"reason": event.reason, "by": event.by}


WIRE: Final[Mapping[type[Event], Wire]] = {
    RunStarted: Wire("execution.started"),
    NodeStarted: Wire("node:start", lambda event: {"type": event.node_type}),
    NodeCompleted: Wire("node:complete"),
    NodeFailed: Wire("node:error"),
    NodeWaiting: Wire("run:paused"),
    NodeSkipped: Wire("node:skipped"),
    NodeStale: Wire("node:stale"),
    NodeItemEnded: Wire("node:item"),
    NodeDelta: Wire("node:delta"),
    NodePartial: Wire("node:partial"),
    NodeStreamReset: Wire("node:stream_reset"),
    RepairDiagnosing: Wire("node.repair_diagnosing"),
    RunCompleted: Wire("workflow:complete"),
    RunFailed: Wire("workflow:error"),
    NodeOverridden: Wire("node:overridden"),
    NodeRerun: Wire("node:rerun"),
    NodeReviewed: Wire("node:reviewed", _reviewed),
    RunRolledBack: Wire("run:rolled_back", _rolled_back),
    NodeQueued: Wire("node:queued"),
    RunResumed: Wire("run:resumed", _resumed),
    RunPaused: Wire("run:paused"),
    RunCancelled: Wire("run:cancelled"),
}
"""Every event class, with the name it has outside the process (a class missing here is a bug:
tests/engine/test_event_wire.py checks)."""


STREAMED: Final = frozenset(WIRE[kind].name for kind in (NodeDelta, NodePartial, NodeStreamReset))
"""The names of a streaming answer's events: passed on as they come, never numbered or kept."""


def wire_name(kind: type[Event]) -> str:
    """The name events of class `kind` have outside the process."""
    return WIRE[kind].name


def to_wire(event: Event) -> WireEvent:
    """`event` as it travels."""
    wire = WIRE[type(event)]
    data = wire.data(event) if wire.data is not None else {name: getattr(event, name) for name in _OWN[type(event)]}
    return WireEvent(wire.name, event.run_id, event.node_id, data, event.at, event.path)


_OWN = {kind: tuple(f.name for f in fields(kind) if f.name not in {g.name for g in fields(Event)}) for kind in WIRE}
"""The fields of each class that `Event` does not have, in their order: its payload by default."""
