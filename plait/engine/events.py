"""The engine's in-process event bus; the HTTP SSE stream builds on it (docs/http.md lists the kinds)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Event:
    """One thing the engine reported, as every listener receives it.

    Frozen, and the same object goes to every listener: `data` and the values in it (a node's
    `output` among them) are shared with the engine and the other listeners, so read them and
    never change them. `at` is the wall-clock time (`time.time()`) of the emission.
    """

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
    """Delivers the engine's events to in-process listeners, synchronously.

    What a caller can rely on:
    - `emit` calls each listener subscribed at that moment, in the order they subscribed, before
      it returns; with no listener it builds no event. A listener sees only events emitted after
      it subscribed: nothing is buffered or replayed.
    - An event that reports a result (`node:complete`, `node:error`, `node:skipped`, `node:stale`,
      `run:paused`, `workflow:complete`, `workflow:error`) is emitted only after the write it
      reports has committed; `execution.started` and `node:start` announce work about to begin.
    - An exception a listener raises stops the delivery and propagates out of `emit` into the
      engine: listeners must not raise, and must return quickly (they run on the event loop).
    - `subscribe` returns the function that unsubscribes the listener; call it once (a second
      call raises ValueError). Subscribing or unsubscribing during a delivery applies from the
      next event.
    Not thread-safe: subscribe, unsubscribe and emit on the event loop's thread.
    """

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
