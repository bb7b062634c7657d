"""The engine's in-process event bus; the HTTP SSE stream builds on it (docs/http.md lists the kinds)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Event:
    kind: str
    """What the engine emits: execution.started, node:start, node:complete (with `node_run_id` and
    the full `output`: a listener decides how much of it to pass on), node:error, node:skipped,
    node:stale, run:paused, workflow:complete, workflow:error. The server adds what it does
    itself (corrections, pause, resume, cancel)."""
    run_id: str
    node_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)


Listener = Callable[[Event], None]


class EventBus:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, kind: str, run_id: str, node_id: str | None = None, **data: Any) -> None:
        if not self._listeners:
            return
        event = Event(kind, run_id, node_id, data)
        for listener in list(self._listeners):
            listener(event)
