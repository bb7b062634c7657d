"""Fair sharing of sandbox children between owners (runs).

Every evaluation asks for a child under an owner key (the run id). A free child goes to the
waiting owner that holds the fewest children (first come among equals), and no owner holds more
than its share: `min(base, ceil(maximum / owners))`, where `owners` counts the owners waiting or
holding. When every child is busy and an owner under its share waits, the pool grows, up to
`maximum` children; the extra ones are stopped again once nobody waits. So one run with forty
spinning expressions holds at most `base` children, and another run's evaluation gets a child
at once (a new one if need be) instead of queueing behind them.
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
    """One request for a child: granted (`item`), refused (`error`) or still waiting."""

    def __init__(self, owner: str | None, on_done: Callable[[], None] | None) -> None:
        self.owner = owner
        self.item: T | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._on_done = on_done

    def _finish(self) -> None:
        self.done.set()
        if self._on_done is not None:
            self._on_done()


class FairPool(Generic[T]):
    """Shares `base` to `maximum` items (sandbox children) between owners: no owner holds more
    than its share while another waits, and a closed pool refuses every request."""

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

    def request(self, owner: str | None, on_done: Callable[[], None] | None = None) -> Ticket[T]:
        """Queue a request; `on_done` is called (under the pool's lock) when it is granted or refused."""
        ticket: Ticket[T] = Ticket(owner, on_done)
        with self._lock:
            if self._closed:
                ticket.error = SandboxError("the sandbox is closed")
                ticket._finish()
                return ticket
            self._waiting.append(ticket)
            self._dispatch()
        return ticket

    def withdraw(self, ticket: Ticket[T]) -> None:
        """The requester gave up (cancelled): drop it from the queue, or give back its child."""
        with self._lock:
            if ticket in self._waiting:
                self._waiting.remove(ticket)
                self._dispatch()
                return
        if ticket.item is not None:
            self.release(ticket.item, ticket.owner)
            ticket.item = None

    def release(self, item: T, owner: str | None) -> T | None:
        """Give a child back; returns it when it is surplus (the caller stops it)."""
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
            self._dispatch()
        return None

    def close(self) -> list[T]:
        """Refuse every waiting request; every child, busy ones included, for the caller to stop."""
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
        """Under the lock: grant children to eligible waiters while there are children to give."""
        while self._waiting:
            owners = set(self._holding) | {ticket.owner for ticket in self._waiting}
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
