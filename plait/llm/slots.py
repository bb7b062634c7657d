"""A provider's concurrency slots, shared by priority.

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
import weakref
from collections import deque

CRITICAL = 8
"""Priorities from here up may use the reserved slots (and fail over rather than queue)."""


class PrioritySlots:
    """One provider's concurrency slots, handed out by priority.

    What a caller can rely on:
    - At most `capacity` slots are in use. Requests below `CRITICAL` (8) use at most
      `capacity - reserved` of them, so `reserved` slots stay free for critical ones; the
      reserve is never every slot.
    - Waiting requests are granted highest priority first, first come first served within a
      priority, and a request never takes a slot ahead of a waiter as urgent as it or more
      (`has_room` and `try_acquire` say no then).
    - Each successful `acquire` or `try_acquire` needs exactly one `release`. An `acquire`
      cancelled while it waits holds nothing: a slot granted just as it was cancelled goes back.
    Use it from one event loop; it is not thread-safe.
    """

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
    parsing, validation and commits, and slots would sit idle meanwhile. The caller continues
    through `paced()`: the woken request's task is already queued when the pacer lets it on."""
    await paced()


PER_TURN = 3
"""Deferrable continuations let on per loop turn at least. One is the processing of an answer
or of a commit (~100-150 µs), so a turn stays well under a millisecond."""

DRAIN_TURNS = 16
"""A long backlog shrinks by a sixteenth each turn (when more than `PER_TURN` x 16 wait).
Answers held back hold their runs' memory: W3, 500 runs in flight, took 53 KiB each with a
fixed 3 per turn, 37 KiB with this, 39 KiB without pacing; W2's wall time barely moves."""


class _Pacer:
    """Lets queued continuations on a few per loop turn (more when many wait), in arrival order."""

    def __init__(self) -> None:
        # No reference to the loop: `_pacers` keys pacers by their loop weakly.
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._pumping = False
        self.calls = 0
        """Model calls in flight on this loop (`count_call`)."""
        self._free = PER_TURN
        """Continuations that may still go on at once in this loop turn (`may_go_on`)."""
        self._refilling = False

    def wait(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        future = loop.create_future()
        self._waiting.append(future)
        if not self._pumping:
            self._pumping = True
            loop.call_soon(self._pump)
        return future

    def go_on(self, loop: asyncio.AbstractEventLoop) -> bool:
        if self.calls or self._waiting or not self._free:
            return False
        self._free -= 1
        if not self._refilling:
            self._refilling = True
            loop.call_soon(self._refill)  # at the start of the next turn
        return True

    def _refill(self) -> None:
        self._free, self._refilling = PER_TURN, False

    def _pump(self) -> None:
        let_on, limit = 0, max(PER_TURN, len(self._waiting) // DRAIN_TURNS)
        while self._waiting and let_on < limit:
            future = self._waiting.popleft()
            if not future.done():  # a cancelled waiter gives its place up
                future.set_result(None)
                let_on += 1
        if self._waiting:
            asyncio.get_running_loop().call_soon(self._pump)
        else:
            self._pumping = False


_pacers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pacer] = weakref.WeakKeyDictionary()


def _pacer(loop: asyncio.AbstractEventLoop) -> _Pacer:
    pacer = _pacers.get(loop)
    if pacer is None:
        pacer = _pacers[loop] = _Pacer()
    return pacer


async def paced() -> None:
    """Wait for a loop turn with room for deferrable work: processing an answer, a commit's aftermath.

    asyncio runs every callback that is ready in one turn before it looks at timers and sockets
    again. When 64 model calls end together, processing all their answers in one turn (~10 ms)
    delays every call whose timer or socket comes due meanwhile, and the slot it holds with it.
    Continuations that can wait queue here and go on a few per turn: a turn stays short, a call
    that ends is seen at once, and the next request takes its slot. The work itself is not
    delayed by more than the backlog ahead of it."""
    loop = asyncio.get_running_loop()
    await _pacer(loop).wait(loop)


def may_go_on() -> bool:
    """Whether deferrable work may go on at once instead of waiting in `paced()`: no model call
    is in flight on this loop (none can end and be kept waiting), nothing is queued in the pacer
    (nothing overtaken), and fewer than `PER_TURN` continuations went on at once in this loop
    turn (a turn stays short). Waiting costs two loop turns, which in a chain of quick nodes is
    a share of every node's time (docs/performance.md). Call it on the loop; when it says True,
    go on at once (it counted the continuation)."""
    loop = asyncio.get_running_loop()
    return _pacer(loop).go_on(loop)


def count_call(delta: int) -> None:
    """Count a model call starting (+1) or ending (-1) on this loop: while one is in flight,
    deferrable work waits in `paced()` (`may_go_on` says no). Nothing is kept per call: with a
    limit of 64 slots, thousands of calls may be waiting for one (a run's memory, W3)."""
    _pacer(asyncio.get_running_loop()).calls += delta
