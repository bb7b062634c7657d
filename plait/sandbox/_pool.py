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
from collections import Counter, deque
from collections.abc import Callable
from typing import Generic, TypeVar

from plait.sandbox.errors import SandboxError

T = TypeVar("T")


class Ticket(Generic[T]):
    """One request for a place: granted (`item`), refused (`error`) or still waiting."""

    __slots__ = ("_event", "_on_done", "error", "item", "owner", "seq", "withdrawn")

    def __init__(self, owner: str | None, seq: int) -> None:
        self.owner = owner
        self.seq = seq
        """Its place in the order of arrival (first come among equals)."""
        self.item: T | None = None
        self.error: BaseException | None = None
        self.withdrawn = False
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
    share while another waits, and a closed pool refuses every request. Waiting tickets are kept
    per owner, so granting one costs a look at each waiting owner, not at each ticket."""

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
        self._queues: dict[str | None, deque[Ticket[T]]] = {}
        """The waiting tickets of each owner that has some, oldest first."""
        self._seq = 0
        self._closed = False

    def request(self, owner: str | None) -> Ticket[T]:
        """A ticket, granted at once when a place is free for `owner` (`ticket.done`); else it
        waits its turn (`wait`, `when_done`)."""
        with self._lock:
            self._seq += 1
            ticket: Ticket[T] = Ticket(owner, self._seq)
            if self._closed:
                ticket.error = SandboxError("the sandbox is closed")
                return ticket
            if not self._queues and self._idle and self._holding[owner] < self._share(owner):
                self._grant(ticket)  # nobody waits and a place is free: the common case
                return ticket
            self._queues.setdefault(owner, deque()).append(ticket)
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
            if not ticket.done:
                ticket.withdrawn = True  # skipped (and dropped) when it reaches its queue's head
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
            if len(self._all) > self.base and not self._queues:
                self._all.remove(item)
                return item
            self._idle.append(item)
            if self._queues:
                self._dispatch()
        return None

    def close(self) -> list[T]:
        """Refuse every waiting request; every place, busy ones included, for the caller to stop."""
        with self._lock:
            self._closed = True
            queues, self._queues = self._queues, {}
            for queue in queues.values():
                for ticket in queue:
                    if not ticket.withdrawn:
                        ticket.error = SandboxError("the sandbox was closed")
                        ticket._finish()
            items, self._all, self._idle = list(self._all), [], []
        return items

    def items(self) -> list[T]:
        with self._lock:
            return list(self._all)

    def _share(self, newcomer: str | None) -> int:
        """Under the lock: how many places each owner may hold, counting the owners holding or
        waiting, and `newcomer`."""
        owners = len(self._holding.keys() | self._queues.keys() | {newcomer})
        return min(self.base, math.ceil(self.maximum / owners))

    def _grant(self, ticket: Ticket[T]) -> None:
        if not self._idle:
            fresh = self._make()
            self._all.append(fresh)
            self._idle.append(fresh)
        self._holding[ticket.owner] += 1
        ticket.item = self._idle.pop()
        ticket._finish()

    def _dispatch(self) -> None:
        """Under the lock: grant places to eligible waiters while there are places to give: to
        the owner under its share that holds the fewest, the oldest ticket first among equals."""
        while self._queues:
            share = self._share(next(iter(self._queues)))
            best: deque[Ticket[T]] | None = None
            for owner, queue in list(self._queues.items()):
                while queue and queue[0].withdrawn:
                    queue.popleft()
                if not queue:
                    del self._queues[owner]
                    continue
                if self._holding[owner] >= share:
                    continue
                if best is None or (self._holding[owner], queue[0].seq) < (self._holding[best[0].owner], best[0].seq):
                    best = queue
            if best is None:
                return
            if not self._idle and len(self._all) >= self.maximum:
                return
            ticket = best.popleft()
            if not best:
                del self._queues[ticket.owner]
            self._grant(ticket)
