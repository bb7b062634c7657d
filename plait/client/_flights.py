"""The runs a client executes, each as a task on the client's loop, with the events it emitted.

A started run's events are kept from the moment the client started driving it, so
`events(run_id)` called after `start` misses none of them, whenever the caller gets to iterate.
The client listens to its engines' events only while such a run is in flight: a run nobody
can follow (one `run` waits for) costs no event at all, as with no listener the engine builds none.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plait.engine.events import Event, EventBus

EVENTS_PER_RUN = 10_000
"""Events kept per run for a late iterator; beyond it the oldest are dropped (a live iterator
still receives every one)."""
FINISHED_KEPT = 100
"""Ended runs whose events are kept for `events(run_id)` after the end, the most recent."""
_END = object()


class Flight:
    """One run driven by the client: its task, its events so far, and the live iterators."""

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.events: list[Event] = []
        self.readers: list[asyncio.Queue[Any]] = []

    def add(self, event: Event) -> None:
        if len(self.events) >= EVENTS_PER_RUN:
            del self.events[0]
        self.events.append(event)
        for queue in self.readers:
            queue.put_nowait(event)

    def ended(self) -> None:
        for queue in self.readers:
            queue.put_nowait(_END)

    async def follow(self) -> AsyncIterator[Event]:
        """The run's events so far, then each new one until the run's task ends."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        backlog = list(self.events)  # taken with the registration, in one step of the loop: nothing falls between
        done = self.task.done()
        if not done:
            self.readers.append(queue)
        try:
            for event in backlog:
                yield event
            while not done:
                item = await queue.get()
                if item is _END:
                    return
                yield item
        finally:
            if queue in self.readers:
                self.readers.remove(queue)


class Flights:
    """The client's runs in flight and the recently ended ones, by run id."""

    def __init__(self) -> None:
        self._by_run: OrderedDict[str, Flight] = OrderedDict()
        self._bus: EventBus | None = None
        self._unsubscribe: Callable[[], None] | None = None

    def listen_to(self, bus: EventBus) -> None:
        """The bus the client's engines emit on (listened to while a followed run is in flight)."""
        self._bus = bus

    def get(self, run_id: str) -> Flight | None:
        return self._by_run.get(run_id)

    def start(self, run_id: str, task: asyncio.Task[Any]) -> Flight:
        """Follow a run started for a caller who may iterate its events."""
        flight = Flight(task)
        self._by_run[run_id] = flight
        self._by_run.move_to_end(run_id)
        if self._unsubscribe is None and self._bus is not None:
            self._unsubscribe = self._bus.subscribe(self.on_event)
        task.add_done_callback(lambda _: self._ended(run_id, flight))
        return flight

    def on_event(self, event: Event) -> None:
        """The listener on the client's event bus: a child run's events go to the iterators of
        its top-level run (each says where it comes from in its `path`)."""
        flight = self._by_run.get(event.path[0][0] if event.path else event.run_id)
        if flight is not None and not flight.task.done():
            flight.add(event)

    def in_flight(self) -> list[Flight]:
        return [f for f in self._by_run.values() if not f.task.done()]

    def _ended(self, run_id: str, flight: Flight) -> None:
        flight.ended()
        if self._unsubscribe is not None and not self.in_flight():
            self._unsubscribe()
            self._unsubscribe = None
        done = [r for r, f in self._by_run.items() if f.task.done()]
        for old in done[: max(0, len(done) - FINISHED_KEPT)]:
            del self._by_run[old]
