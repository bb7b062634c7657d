"""Fair sharing of evaluator processes between owners (root runs).

Every evaluation asks for a place under an owner key: the id of the root run it belongs to, so
that a run and all its child runs (a MAP's items, a LOOP's iterations) count as one. A free place
goes to the waiting owner that holds the fewest (first come among equals), and no owner holds
more than its share: `min(base, ceil(maximum / owners))`, where `owners` counts the owners waiting
or holding. When every place is busy and an owner under its share waits, the pool grows, up to
`maximum` places; the extra ones are stopped again once nobody waits. So one run with forty
spinning expressions holds at most `base` places, and another run's evaluation gets a place at
once (a new one if need be) instead of queueing behind them.

A request that finds a free place is granted on the spot, without waking anyone; only one that
must wait is told later (`when_done` for an event loop, `wait` for a thread).
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from typing import Generic, TypeVar

from plait.sandbox.errors import SandboxError

T = TypeVar("T")


class Ticket(Generic[T]):
    """One request for a place: granted (`item`), refused (`error`) or still waiting."""

    __slots__ = ("_event", "_on_done", "error", "item", "owner")

    def __init__(self, owner: str | None) -> None:
        self.owner = owner
        self.item: T | None = None
        self.error: BaseException | None = None
        self._event: threading.Event | None = None
        self._on_done: Callable[[], None] | None = None

    @property
    def done(self) -> bool:
        return self.item is not None or self.error is not None

    def _finish(self) -> None:
        if self._event is not None:
            self._event.set()
        if self._on_done is not None:
            self._on_done()


class FairPool(Generic[T]):
    """Shares `base` to `maximum` items (evaluators) between owners: no owner holds more than its
    share while another waits, and a closed pool refuses every request."""

    def __init__(self, make: Callable[[], T], *, base: int, maximum: int) -> None:
        if base <= 0 or maximum < base:
            raise ValueError("the pool needs 0 < base <= maximum")
        self._make = make
        self.base = base
        self.maximum = maximum
        self._lock = threading.Lock()
        self._idle: list[T] = []
        self._all: list[T] = []
        self._holding: Counter[str | None] = Counter()
        self._waiting: list[Ticket[T]] = []
        self._closed = False

    def request(self, owner: str | None) -> Ticket[T]:
        """A ticket, granted at once when a place is free for `owner` (`ticket.done`); else it
        waits its turn (`wait`, `when_done`)."""
        ticket: Ticket[T] = Ticket(owner)
        with self._lock:
            if self._closed:
                ticket.error = SandboxError("the sandbox is closed")
                return ticket
            self._waiting.append(ticket)
            self._dispatch()
        return ticket

    def wait(self, ticket: Ticket[T], timeout: float | None = None) -> bool:
        """Block this thread until the ticket is granted or refused; False at `timeout` (then
        `withdraw` it)."""
        with self._lock:
            if ticket.done:
                return True
            if ticket._event is None:
                ticket._event = threading.Event()
            event = ticket._event
        return event.wait(timeout)

    def when_done(self, ticket: Ticket[T], on_done: Callable[[], None]) -> bool:
        """Have `on_done` called (under the pool's lock, by whichever thread grants or refuses the
        ticket) when it is; False, and no call, when it is already."""
        with self._lock:
            if ticket.done:
                return False
            ticket._on_done = on_done
            return True

    def withdraw(self, ticket: Ticket[T]) -> None:
        """The requester gave up (cancelled): drop it from the queue, or give back its place."""
        with self._lock:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
                self._dispatch()
                return
        if ticket.item is not None:
            self.release(ticket.item, ticket.owner)
            ticket.item = None

    def release(self, item: T, owner: str | None) -> T | None:
        """Give a place back; returns it when it is surplus (the caller stops it)."""
        with self._lock:
            self._holding[owner] -= 1
            if self._holding[owner] <= 0:
                del self._holding[owner]
            if self._closed:
                return None
            if len(self._all) > self.base and not self._waiting:
                self._all.remove(item)
                return item
            self._idle.append(item)
            if self._waiting:
                self._dispatch()
        return None

    def close(self) -> list[T]:
        """Refuse every waiting request; every place, busy ones included, for the caller to stop."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, []
            for ticket in waiting:
                ticket.error = SandboxError("the sandbox was closed")
                ticket._finish()
            items, self._all, self._idle = list(self._all), [], []
        return items

    def items(self) -> list[T]:
        with self._lock:
            return list(self._all)

    def _dispatch(self) -> None:
        """Under the lock: grant places to eligible waiters while there are places to give."""
        while self._waiting:
            owners = set(self._holding)
            owners.update(ticket.owner for ticket in self._waiting)
            share = min(self.base, math.ceil(self.maximum / len(owners)))
            eligible = [ticket for ticket in self._waiting if self._holding[ticket.owner] < share]
            if not eligible:
                return
            if not self._idle:
                if len(self._all) >= self.maximum:
                    return
                fresh = self._make()
                self._all.append(fresh)
                self._idle.append(fresh)
            ticket = min(eligible, key=lambda t: self._holding[t.owner])  # first among equals
            self._waiting.remove(ticket)
            self._holding[ticket.owner] += 1
            ticket.item = self._idle.pop()
            ticket._finish()
