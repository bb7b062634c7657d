"""A provider's concurrency slots, shared by priority (SPEC §6.2, seed 001 §3.4).

Node priorities run 0-10 (default 5). A share of the slots is reserved for critical requests
(priority 8-10): the others may only take a slot while more than the reserve is free. Waiting
requests are served highest priority first, first come first served within one priority, so
under pressure the low priorities (0-4) yield to everything above them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math

CRITICAL = 8
"""Priorities from here up may use the reserved slots (and fail over rather than queue)."""


class PrioritySlots:
    def __init__(self, capacity: int, reserve_share: float = 0.0):
        self.capacity = capacity
        self.reserved = min(capacity - 1, math.ceil(capacity * reserve_share)) if reserve_share > 0 else 0
        self.in_use = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def waiting(self) -> int:
        """Requests queued for a slot."""
        return sum(1 for *_, future in self._waiting if not future.done())

    def _room_for(self, priority: int) -> bool:
        limit = self.capacity if priority >= CRITICAL else self.capacity - self.reserved
        return self.in_use < limit

    def has_room(self, priority: int) -> bool:
        """A slot is free for this priority and nobody as urgent or more is waiting for one."""
        if self._waiting and -self._waiting[0][0] >= priority:
            return False
        return self._room_for(priority)

    def try_acquire(self, priority: int) -> bool:
        """Take a slot at once if `has_room`."""
        if not self.has_room(priority):
            return False
        self.in_use += 1
        return True

    async def acquire(self, priority: int) -> None:
        if self.try_acquire(priority):
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (-priority, next(self._order), future)
        heapq.heappush(self._waiting, entry)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # granted just as it was cancelled: give it back
                self.release()
            else:
                self._waiting.remove(entry)
                heapq.heapify(self._waiting)
            raise

    def release(self) -> None:
        self.in_use -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiting:
            negative, _, future = self._waiting[0]
            if future.done():
                heapq.heappop(self._waiting)
                continue
            if not self._room_for(-negative):
                return  # the most urgent waiter cannot go yet: nobody behind it may overtake it
            heapq.heappop(self._waiting)
            self.in_use += 1
            future.set_result(None)


async def hand_over() -> None:
    """Call right after releasing a slot: lets the request queued for it start before the caller
    processes its answer. Model calls finish in bursts; if each answer were processed at once,
    the call waiting for the last slot of a burst would start only after all the burst's
    parsing, validation and commits, and slots would sit idle meanwhile. Two yields: answers
    released in the same loop turn are queued interleaved with the calls they woke, so one
    yield would still put the earlier answers' processing ahead of the later calls."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)
