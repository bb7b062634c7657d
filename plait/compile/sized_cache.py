"""A least-recently-used cache bounded by the bytes its entries hold, keyed by a digest of large keys.

A cache keyed by a schema's text holds that text for as long as the entry lives: with an entry
count as the only bound, a client sending distinct multi-megabyte schemas would fill memory
that is never freed. So each entry is charged what it holds (the caller's estimate), the oldest
entries are dropped past the budget, and a long key is kept as its SHA-256 digest.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

V = TypeVar("V")
DIGEST_ABOVE = 128
"""Keys longer than this many characters are stored as their digest."""


def cache_key(text: str) -> str:
    """`text` itself when short, else its SHA-256 digest (a cache must not hold megabytes of key)."""
    if len(text) <= DIGEST_ABOVE:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class SizedCache(Generic[V]):
    """Entries charged `cost` bytes each; the least recently used go first once `max_bytes` or
    `max_entries` is passed. Thread-safe: validators are built and used in worker threads too."""

    def __init__(self, max_bytes: int, max_entries: int):
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._entries: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The bytes the cache is charged for now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def get_or_build(self, key_text: str, build: Callable[[], V], cost: Callable[[V], int]) -> V:
        """The cached value of `key_text`, else `build()` (outside the lock), charged `cost(value)` bytes;
        a value dearer than the whole budget is returned without being kept."""
        key = cache_key(key_text)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found[0]
        value = build()
        charge = max(1, cost(value))
        if charge > self.max_bytes:
            return value
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._bytes -= previous[1]
            self._entries[key] = (value, charge)
            self._bytes += charge
            while self._bytes > self.max_bytes or len(self._entries) > self.max_entries:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
