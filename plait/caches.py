"""Caches bounded by the memory they hold, not by how many entries they have.

Plait remembers what it derives from text a graph author writes (a syntax check, a parsed or
compiled template, the names an expression reads) so that a run pays for each distinct text
once. A bound on entries alone lets a few thousand distinct multi-megabyte texts (sent to
`POST /api/graphs/validate`, say) hold gigabytes for the life of the process. So every such
cache here is bounded by bytes: what it holds is weighed when it is stored, the least recently
used entries go first, and a text longer than `DIGEST_OVER` is kept as its digest, never as
itself.

    @bounded("syntax checks", max_bytes=8 << 20, weigh=small)
    def check(kind: str, text: str) -> Result: ...

    check.cache.bytes       # what the cache holds now (keys and values, as weighed)
    cache_stats()           # {name: (entries, bytes)} of every cache in the process

A weight is an estimate made when the entry is stored (`weigh(value, arguments)` plus the key's
size), not
a measure of the heap: it must grow with what the entry really holds, which is what bounds it.
An entry heavier than the whole bound is returned but not kept. Thread-safe; the function runs
outside the lock, so two threads may compute one value at once (both results are equal).
"""

from __future__ import annotations

import functools
import hashlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, ParamSpec, TypeVar, cast

DIGEST_OVER = 256
"""Text arguments longer than this are keyed by their digest (32 bytes) instead of themselves."""
ENTRY_OVERHEAD = 200
"""Bytes counted for every entry besides its key and value (the dict slot, the node, the tuple)."""

P = ParamSpec("P")
V = TypeVar("V")

_all: weakref.WeakSet[ByteBoundCache[Any]] = weakref.WeakSet()
"""Every cache alive (a store's go with the store)."""
_all_lock = threading.Lock()


def text_key(text: str) -> Hashable:
    """`text` as a cache key: itself when short, else its digest (the text is not kept)."""
    if len(text) <= DIGEST_OVER:
        return text
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=32).digest()


def _key(parts: tuple[Any, ...]) -> tuple[Hashable, ...]:
    for part in parts:
        if isinstance(part, str) and len(part) > DIGEST_OVER:
            return tuple(text_key(part) if isinstance(part, str) else part for part in parts)
    return parts  # no long text: its own key (the common case, without building another tuple)


def _key_size(key: Hashable) -> int:
    if isinstance(key, str | bytes):
        return len(key)
    if isinstance(key, tuple):
        return sum(_key_size(part) for part in key)
    return 16


class ByteBoundCache(Generic[V]):
    """A least-recently-used map bounded by `max_bytes` (keys and values as weighed) and by
    `max_entries`. Keys are tuples of hashables; long strings in them are replaced by digests."""

    def __init__(
        self, name: str, max_bytes: int, *, max_entries: int = 65_536, weigh: Callable[[V, tuple[Any, ...]], int]
    ):
        self.name = name
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._weigh = weigh
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0
        """What the entries weigh now (at most `max_bytes`)."""
        with _all_lock:
            _all.add(self)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, parts: tuple[Any, ...], make: Callable[[], V]) -> V:
        """The value stored under `parts`, else `make()`, stored when it fits."""
        found = self._entry(_key(parts))
        if found is not None:
            return found[0]
        value = make()
        self.put(parts, value)
        return value

    def hit(self, parts: tuple[Any, ...]) -> tuple[V, int] | None:
        """(value, weight) stored under `parts`, now the most recently used; None: none."""
        if len(parts) == 1 and (type(parts[0]) is not str or len(parts[0]) <= DIGEST_OVER):
            return self._entry(parts)  # one short argument: its own key
        return self._entry(_key(parts))

    def find(self, parts: tuple[Any, ...]) -> V | None:
        """The value stored under `parts` (None: none), now the most recently used."""
        found = self._entry(_key(parts))
        return None if found is None else found[0]

    def _entry(self, key: tuple[Hashable, ...]) -> tuple[V, int] | None:
        # Without the lock: each dict operation is atomic, and an entry evicted by another
        # thread between the two is still a right answer.
        found = self._entries.get(key)
        if found is not None:
            try:  # noqa: SIM105 (a hot path: `suppress` costs more than the lookup)
                self._entries.move_to_end(key)
            except KeyError:
                pass
        return found

    def put(self, parts: tuple[Any, ...], value: V, *, weight: int | None = None) -> None:
        """Keep `value` under `parts` unless it alone weighs more than the bound; the least
        recently used entries make room. `weight`: the value's, when the caller knows it better
        than the cache's `weigh`."""
        key = _key(parts)
        weight = _key_size(key) + (self._weigh(value, parts) if weight is None else weight) + ENTRY_OVERHEAD
        if weight > self.max_bytes:
            return
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self.bytes -= previous[1]
            self._entries[key] = (value, weight)
            self.bytes += weight
            while self.bytes > self.max_bytes or len(self._entries) > self.max_entries:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0


class BoundedFunction(Generic[P, V]):
    """A function whose results are kept in a `ByteBoundCache` (`.cache`), by its arguments."""

    def __init__(self, func: Callable[P, V], cache: ByteBoundCache[V]):
        self.func = func
        self.cache = cache
        functools.update_wrapper(self, func)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> V:
        parts = (*args, *sorted(kwargs.items())) if kwargs else args
        found = self.cache.hit(parts)  # the common case, without building the closure below
        if found is not None:
            return found[0]
        return self.cache.get(parts, lambda: self.func(*args, **kwargs))

    def cache_clear(self) -> None:
        self.cache.clear()


def bounded(
    name: str, *, max_bytes: int, weigh: Callable[[Any, tuple[Any, ...]], int], max_entries: int = 65_536
) -> Callable[[Callable[P, V]], BoundedFunction[P, V]]:
    """Decorate a function of hashable arguments: its results cached, bounded by bytes."""

    def wrap(func: Callable[P, V]) -> BoundedFunction[P, V]:
        cache: ByteBoundCache[V] = ByteBoundCache(name, max_bytes, max_entries=max_entries, weigh=weigh)
        return BoundedFunction(func, cache)

    return wrap


def cache_stats() -> dict[str, tuple[int, int]]:
    """{name: (entries, bytes)} of the byte-bounded caches of this process (summed over the
    caches of one name: each store has its own, say)."""
    with _all_lock:
        caches = list(_all)
    stats: dict[str, tuple[int, int]] = {}
    for cache in caches:
        entries, weight = stats.get(cache.name, (0, 0))
        stats[cache.name] = (entries + len(cache), weight + cache.bytes)
    return stats


def small(_value: object, _arguments: tuple[Any, ...] = ()) -> int:
    """The weight of a value that holds nothing of its size to speak of (a flag, a short tuple)."""
    return 64


def text_weight(value: object, _arguments: tuple[Any, ...] = ()) -> int:
    """The weight of a value made of text: its length (a string, or the strings of a tuple)."""
    if isinstance(value, str):
        return len(value) + 56
    if isinstance(value, tuple | frozenset | list):
        return sum(text_weight(part) for part in cast(tuple[object, ...], value)) + 8 * len(value) + 56
    return 64
