"""The engine's in-process event bus (event kinds of seed 001 §5.3); the HTTP SSE stream builds on it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Event:
    kind: str
    """execution.started, node:start, node:complete, node:error, node:skipped, run:paused,
    workflow:complete, workflow:error."""
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
