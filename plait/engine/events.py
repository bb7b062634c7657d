"""A run's events, as typed values, and the in-process bus that delivers them.

The engine emits the node and run events; the surfaces emit those of what they do themselves
(corrections, pause, resume, cancel) on their own streams. Outside the process an event has a
name and a JSON payload (`plait.engine.event_wire`; docs/http.md lists them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

RunPath = tuple[tuple[str, str], ...]
"""Where a child run sits: the (run id, node id) of each node above it, outermost first."""


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened to a run, as every listener receives it.

    Frozen, and the same object goes to every listener: the values it holds (a node's `output`
    among them) are shared with the engine and the other listeners, so read them and never
    change them. `node_id` is the node it concerns (None: the run as a whole); `at` is the
    wall-clock time (`time.time()`) it was made."""

    run_id: str
    node_id: str | None = None
    at: float = field(default_factory=time.time, kw_only=True)
    path: RunPath = field(default=(), kw_only=True)
    """For an event of a child run: the (run id, node id) of each node above it, the top-level
    run's first; empty for a top-level run. The bus fills it in (`EventBus.paths`)."""


# -- what the engine emits -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(Event):
    """The engine began driving the run (each time: a start, a resume)."""

    graph: str
    version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeStarted(Event):
    """A claimed node is about to execute."""

    node_type: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeCompleted(Event):
    """A node's output was committed (the full value: a listener decides how much to pass on)."""

    node_run_id: str
    output: Any
    tokens_input: int
    tokens_output: int
    cost_usd: float


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeFailed(Event):
    """A node's failure was committed."""

    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeWaiting(Event):
    """A node parked the run: a HUMAN_REVIEW waits for a person, a WAIT for its time."""

    review_prompt: Any
    due_at: float | None


@dataclass(frozen=True, slots=True)
class NodeSkipped(Event):
    """A node was decided not to run (its branch was not taken)."""


@dataclass(frozen=True, slots=True)
class NodeStale(Event):
    """A correction marked the node's output stale (taken up while the run executes, or made
    by a person)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeItemEnded(Event):
    """A MAP node's item (its child run) ended or paused."""

    index: int
    count: int
    status: str
    child_run_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeDelta(Event):
    """More of a streaming node's answer: the text that arrived since the last delta (pieces
    coalesced, a few per second). `attempt` counts the node's model calls in this activation."""

    text: str
    attempt: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NodePartial(Event):
    """A streaming node's object answer as parsed so far (`value`: the fields complete or
    arriving, the last string cut where the text is), sent with a delta when it changed."""

    value: Any
    attempt: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeStreamReset(Event):
    """The text streamed for a node so far is void (its answer is asked for again: invalid,
    broken off, or asked of another model): show nothing of it; deltas of `attempt` follow."""

    reason: str
    attempt: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RepairDiagnosing(Event):
    """A node with `repair` failed; its repair model is asked to diagnose the failure."""

    error_kind: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCompleted(Event):
    """The run's output was committed."""

    output: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFailed(Event):
    """The run failed (`node_id`: the node that failed it, if one did)."""

    error: dict[str, Any] | None


# -- what the surfaces emit ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeOverridden(Event):
    """A person corrected a node's output; `node_run_id` is where the full value is read."""

    output: Any
    policy: str
    note: str | None
    by: str
    node_run_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeRerun(Event):
    """A person asked for a node to run again."""

    downstream: bool
    by: str
    node_run_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeReviewed(Event):
    """A person answered a HUMAN_REVIEW: approved it, or gave a corrected `output`."""

    approved: bool
    note: str | None
    output: Any = None
    by: str
    node_run_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRolledBack(Event):
    """A person restored a value (`node_id`; None: the run input) to an earlier ledger version."""

    target: str
    to_version: int
    cascade: bool
    by: str
    node_run_id: str | None = None


@dataclass(frozen=True, slots=True)
class NodeQueued(Event):
    """A correction queued the node to run again."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResumed(Event):
    """The run goes on: `reason` is `review` (an answered review; `by`), `requested` or `due`."""

    reason: str
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPaused(Event):
    """The run was paused on request (`reason`); a node parking it is `NodeWaiting`."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCancelled(Event):
    """The run was cancelled."""

    error: dict[str, Any] | None


CorrectionEvent = NodeOverridden | NodeRerun | NodeReviewed | RunRolledBack
"""The event that announces what a person corrected."""

Listener = Callable[[Event], None]


class EventBus:
    """Delivers a run's events to in-process listeners, synchronously.

    What a caller can rely on:
    - `emit` calls each listener subscribed at that moment, in the order they subscribed, before
      it returns. A listener sees only events emitted after it subscribed: nothing is buffered
      or replayed.
    - An event that reports a result (`NodeCompleted`, `NodeFailed`, `NodeSkipped`, `NodeStale`,
      `NodeWaiting`, `RunCompleted`, `RunFailed`) is emitted only after the write it reports
      has committed; `RunStarted` and `NodeStarted` announce work about to begin.
    - An exception a listener raises stops the delivery and propagates out of `emit` into the
      engine: listeners must not raise, and must return quickly (they run on the event loop).
    - `subscribe` returns the function that unsubscribes the listener; call it once (a second
      call raises ValueError). Subscribing or unsubscribing during a delivery applies from the
      next event.
    Not thread-safe: subscribe, unsubscribe and emit on the event loop's thread.
    """

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self.paths: dict[str, RunPath] = {}
        """The path of each child run being driven (set by the engine while it drives one): its
        events get it on their way to the listeners."""

    @property
    def listened(self) -> bool:
        """Whether a listener is subscribed: an event nobody would receive need not be built
        (the engine builds two per node)."""
        return bool(self._listeners)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        if self.paths and not event.path and event.run_id in self.paths:
            event = replace(event, path=self.paths[event.run_id])
        for listener in list(self._listeners):
            listener(event)
