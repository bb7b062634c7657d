"""Run events for SSE clients: the engine's `EventBus`, numbered per run and kept in a bounded
replay buffer, so that a client reconnecting with `Last-Event-ID` gets exactly what it missed.
The buffer is bounded in events per run, in runs, and in bytes over all runs (an event's data
weighed as JSON when it is kept): past `max_bytes`, the oldest events of the least recently
active runs go first, and a client that missed them is told (`stream:gap`).

Ids are per run, 1, 2, 3, ... in the order the engine emitted them. Events are kept as clients
read them: each typed event under its wire name and payload (`plait.engine.event_wire`). Everything here runs on
the server's event loop (the engine emits there, the SSE generators read there): no locks.
A run this server has not watched yet is seeded from the store first (`history.py`), so its
ids continue after the rebuilt history instead of starting again at 1.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from plait.api.history import Past
from plait.engine.event_wire import STREAMED, WireEvent, to_wire, wire_name
from plait.engine.events import (
    Event,
    EventBus,
    NodeCompleted,
    NodeDelta,
    NodeFailed,
    NodePartial,
    NodeSkipped,
    NodeWaiting,
    RunCancelled,
    RunCompleted,
    RunFailed,
    RunPath,
)
from plait.redact import redact

ENDING_KINDS = frozenset(wire_name(ended) for ended in (RunCompleted, RunFailed, RunCancelled))
"""After one of these the run has ended: an SSE stream closes (a correction may reopen the run;
the client then reconnects with its Last-Event-ID)."""
GAP = "stream:gap"
"""Sent instead of events that fell out of the buffer: data {"from", "to"} (the lost ids)."""
OUTPUT_CAP_BYTES = 4096
"""The largest `output` an event carries (as JSON); a larger one is left out with
`output_truncated: true`, and `output_url` says where the full value is read."""
DELTA, PARTIAL = wire_name(NodeDelta), wire_name(NodePartial)
ANSWER_ENDS = frozenset(wire_name(k) for k in (NodeCompleted, NodeFailed, NodeWaiting, NodeSkipped))
"""After one of these a node's streamed answer is over: its committed output is the record."""
RESET = "stream:reset"
"""Sent when Last-Event-ID is unknown here (an earlier server numbered differently): the run's
whole buffer follows; data {"last_event_id", "last_id"}."""


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One engine event of a run, with the id it has on this server's streams (an unnumbered
    one, a streamed answer's piece, carries the id of the numbered event before it)."""

    id: int
    kind: str
    run_id: str
    node_id: str | None
    at: float
    data: dict[str, Any]
    numbered: bool = True
    path: RunPath = ()
    """For an event of a child run: the nodes above it, outermost first (`Event.path`)."""

    def to_json(self) -> dict[str, Any]:
        """The event as clients receive it (`path` only for an event of a child run)."""
        sent = {
            "id": self.id,
            "event": self.kind,
            "run_id": self.run_id,
            "node_id": self.node_id,
            "at": self.at,
            "data": self.data,
        }
        if self.path:
            sent["path"] = [{"run_id": run_id, "node_id": node_id} for run_id, node_id in self.path]
        return sent

    def sse(self) -> dict[str, str]:
        """The message sse-starlette sends: `id`, `event` and the JSON `data` (no `id` for an
        unnumbered event, so a client's Last-Event-ID stays the last numbered one)."""
        message = {"event": self.kind, "data": json.dumps(self.to_json(), default=str)}
        return {"id": str(self.id), **message} if self.numbered else message


EVENT_OVERHEAD = 300
"""Bytes an event holds besides its data's JSON (the dataclass, its id, kind and strings)."""


@dataclass
class _RunLog:
    events: deque[RunEvent]
    sizes: deque[int] = field(default_factory=deque)
    """The weight of each event in `events`, in the same order."""
    bytes: int = 0
    next_id: int = 1
    listeners: set[asyncio.Queue[RunEvent]] = field(default_factory=set)
    touched: float = field(default_factory=time.monotonic)
    streams: dict[tuple[str, str], _Answer] = field(default_factory=dict)
    """The answers streaming now, by (run, node), a child run's too: what a client connecting
    mid-answer is sent first."""


@dataclass
class _Answer:
    """A node's answer so far, as its unnumbered events told it, kept for the clients that
    connect while it arrives; `forget` stops keeping it (memory), and those are told so."""

    path: RunPath
    text: str = ""
    attempt: int = 1
    partial: Any = None
    kept: bool = True
    """False: what arrived before is not kept (too large, or the answers over their budget)."""

    @property
    def weight(self) -> int:
        """What it holds, in characters: the text, and about as much again for what it parses to."""
        return len(self.text) * (1 if self.partial is None else 2)

    def told(self, event: WireEvent) -> int:
        """Take one event of the answer in; how much heavier the answer is for it."""
        before = self.weight
        if event.kind == DELTA:
            if self.kept:
                self.text += str(event.data.get("text", ""))
        elif event.kind == PARTIAL:
            if self.kept:
                self.partial = event.data.get("value")
        else:  # a reset: the answer starts again, and can be kept whole again
            self.text, self.partial, self.kept = "", None, True
        self.attempt = int(event.data.get("attempt", self.attempt))
        return self.weight - before

    def forget(self) -> int:
        """Stop keeping the answer; what it held."""
        freed = self.weight
        self.text, self.partial, self.kept = "", None, False
        return freed

    def snapshot(self, run_id: str, node_id: str, last_id: int) -> list[RunEvent]:
        """The answer so far as one delta (and what it parses to), marked `snapshot`; an answer
        not kept is one empty delta marked `incomplete` too: the text before it is missing."""
        at = time.time()
        delta: dict[str, Any] = {"text": self.text, "attempt": self.attempt, "snapshot": True}
        if not self.kept:
            delta["incomplete"] = True
        shown = bool(self.text) or not self.kept
        events = [RunEvent(last_id, DELTA, run_id, node_id, at, delta, False, self.path)] if shown else []
        if self.partial is not None:
            partial = {"value": self.partial, "attempt": self.attempt, "snapshot": True}
            events.append(RunEvent(last_id, PARTIAL, run_id, node_id, at, partial, False, self.path))
        return events


ANSWER_CHARS = 1 << 20
"""The most of one answer kept for clients that connect while it arrives; past it the answer is
not kept (they are told), and its committed output, when the node ends, is the whole of it."""


class EventLog:
    """Numbered events of the runs this server watches; at most `per_run` kept per run, `runs`
    runs (the least recently active without listeners are dropped first) and `max_bytes` in all
    (the oldest events of the least recently active runs are dropped first)."""

    def __init__(
        self,
        bus: EventBus,
        *,
        per_run: int = 5_000,
        runs: int = 1_000,
        max_bytes: int = 64 << 20,
        answer_chars: int = 32 << 20,
    ) -> None:
        """`answer_chars`: what the answers arriving now may hold in all, for clients that
        connect mid-answer (past it, the heaviest are no longer kept)."""
        self.per_run = per_run
        self.max_runs = runs
        self.max_bytes = max_bytes
        self.bytes = 0
        """What the kept events weigh, all runs together (at most `max_bytes` once an event is kept)."""
        self.max_answer_chars = answer_chars
        self.answer_chars = 0
        """What the answers kept hold, all runs together (`_Answer.weight`)."""
        self._runs: OrderedDict[str, _RunLog] = OrderedDict()
        self.unsubscribe_bus = bus.subscribe(self.emit)

    def has(self, run_id: str) -> bool:
        """Whether this server keeps events of the run."""
        return run_id in self._runs

    def open(self, run_id: str, past: Iterable[Past] = ()) -> None:
        """Start the log of a run (fresh: no `past`), unless there is one already."""
        if run_id in self._runs:
            return
        self._evict()
        log = _RunLog(deque())
        self._runs[run_id] = log
        for event in past:
            self._append(run_id, log, event.kind, event.node_id, event.at, event.data)

    def listen(self, run_id: str, after: int) -> tuple[list[RunEvent], asyncio.Queue[RunEvent]]:
        """The buffered events after id `after`, and a queue that receives every later one
        (`forget` it when done). The run must be open.

        A `stream:gap` comes first when events after `after` were dropped from the buffer; a
        `stream:reset` when `after` is beyond the last id (ids of an earlier server's life):
        then the whole buffer follows."""
        log = self._runs[run_id]
        queue: asyncio.Queue[RunEvent] = asyncio.Queue()
        log.listeners.add(queue)
        last = log.next_id - 1
        notice: RunEvent | None = None
        if after > last:
            notice = RunEvent(0, RESET, run_id, None, time.time(), {"last_event_id": after, "last_id": last})
            after = 0
        first = log.events[0].id if log.events else log.next_id
        if first > after + 1:
            notice = RunEvent(first - 1, GAP, run_id, None, time.time(), {"from": after + 1, "to": first - 1})
        backlog = [e for e in log.events if e.id > after]
        answers = [e for (run, node), answer in log.streams.items() for e in answer.snapshot(run, node, last)]
        return ([notice] if notice else []) + backlog + answers, queue

    def forget(self, run_id: str, queue: asyncio.Queue[RunEvent]) -> None:
        log = self._runs.get(run_id)
        if log is not None:
            log.listeners.discard(queue)

    def last_id(self, run_id: str) -> int:
        return self._runs[run_id].next_id - 1

    def emit(self, event: Event) -> None:
        """An event of this server's engine, or one the service itself reports (a node marked
        stale by a correction, a pause)."""
        self.deliver(to_wire(event))

    def deliver(self, event: WireEvent) -> None:
        """An event as it travels: one of a run executed elsewhere (a worker), as if this
        server's engine emitted it."""
        if event.run_id not in self._runs:
            self.open(event.run_id)
        log = self._runs[event.run_id]
        self._runs.move_to_end(event.run_id)
        # a child run's answer is shown on its top-level run's stream too: whoever follows a
        # run sees the answers of the runs its nodes start
        top = self._runs.get(event.path[0][0]) if event.path else None
        logs = [log] if top is None else [log, top]
        if event.kind in STREAMED and event.node_id is not None:
            for shown in logs:
                self._pass_on(shown, event, event.node_id)
            return
        if event.kind in ANSWER_ENDS and event.node_id is not None:
            for shown in logs:
                ended = shown.streams.pop((event.run_id, event.node_id), None)
                if ended is not None:
                    self.answer_chars -= ended.weight
        self._append(event.run_id, log, event.kind, event.node_id, event.at, dict(event.data), event.path)

    def _pass_on(self, log: _RunLog, event: WireEvent, node_id: str) -> None:
        """A piece of a streaming answer: to the listeners now, and into the answer so far."""
        answer = log.streams.setdefault((event.run_id, node_id), _Answer(event.path))
        self.answer_chars += answer.told(event)
        if answer.weight > ANSWER_CHARS:
            self.answer_chars -= answer.forget()
        while self.answer_chars > self.max_answer_chars:  # the heaviest answers kept go first
            heaviest = max((a for g in self._runs.values() for a in g.streams.values()), key=lambda a: a.weight)
            self.answer_chars -= heaviest.forget()
        piece = RunEvent(
            log.next_id - 1, event.kind, event.run_id, node_id, event.at, dict(event.data), False, event.path
        )
        for queue in log.listeners:
            queue.put_nowait(piece)

    def _append(
        self,
        run_id: str,
        log: _RunLog,
        kind: str,
        node_id: str | None,
        at: float,
        data: dict[str, Any],
        path: RunPath = (),
    ) -> None:
        if kind.endswith(":error"):  # errors quote what providers and tools echo (see plait/redact.py)
            data = redact(data)
        if "output" in data:
            data = _capped(run_id, data)
        numbered = RunEvent(log.next_id, kind, run_id, node_id, at, data, True, path)
        log.next_id += 1
        log.touched = time.monotonic()
        if len(log.events) >= self.per_run:
            self._drop_oldest(log)
        size = len(json.dumps(data, default=str, ensure_ascii=False)) + EVENT_OVERHEAD
        log.events.append(numbered)
        log.sizes.append(size)
        log.bytes += size
        self.bytes += size
        for queue in log.listeners:
            queue.put_nowait(numbered)
        self._shrink()

    def _drop_oldest(self, log: _RunLog) -> None:
        log.events.popleft()
        size = log.sizes.popleft()
        log.bytes -= size
        self.bytes -= size

    def _shrink(self) -> None:
        """Drop the oldest events of the least recently active runs until `max_bytes` holds (a
        run left with none and no listener is forgotten)."""
        while self.bytes > self.max_bytes:
            run_id, log = next((r, g) for r, g in self._runs.items() if g.events)
            self._drop_oldest(log)
            if not log.events and not log.listeners:
                self._drop_run(run_id)

    def _evict(self) -> None:
        while len(self._runs) >= self.max_runs:
            idle = next((run_id for run_id, log in self._runs.items() if not log.listeners), None)
            if idle is None:
                return  # every run has a listener: keep them all rather than cut a stream
            self._drop_run(idle)

    def _drop_run(self, run_id: str) -> None:
        log = self._runs.pop(run_id)
        self.bytes -= log.bytes
        self.answer_chars -= sum(answer.weight for answer in log.streams.values())


def _capped(run_id: str, data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its `output` linked to where the full value is read (the node run, else the
    run) and left out when it is over `OUTPUT_CAP_BYTES` of JSON: an event stream stays light
    however large the values a graph makes."""
    node_run_id = data.get("node_run_id")
    url = f"/api/node-runs/{node_run_id}" if node_run_id else f"/api/runs/{run_id}"
    size = len(json.dumps(data["output"], default=str, ensure_ascii=False).encode())
    if size <= OUTPUT_CAP_BYTES:
        return {**data, "output_url": url}
    return {**data, "output": None, "output_truncated": True, "output_bytes": size, "output_url": url}
