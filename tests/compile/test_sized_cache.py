"""Schema caches are bounded by the bytes they hold, not by their number of entries
(plait/compile/sized_cache.py and its users in schema_validator.py, schemas.py, schema_keywords.py)."""

from __future__ import annotations

import gc
import tracemalloc

from plait.compile.schema_validator import cached_validator, messages, schema_key
from plait.compile.schemas import check_json_schema
from plait.compile.sized_cache import SizedCache, cache_key

MB = 1 << 20


def test_distinct_large_schemas_do_not_accumulate() -> None:
    """Each cache used to keep its key (the schema's whole text) and the parsed schema for up to
    1,024-4,096 entries: distinct multi-megabyte schemas piled up and were never freed."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(30):
            schema = {"type": "object", "description": f"{index}:" + "x" * MB, "properties": {"n": {"pattern": "^a"}}}
            assert check_json_schema(schema) == []
            assert messages(cached_validator(schema_key(schema)), {"n": "b"}) == ["n: 'b' does not match '^a'"]
            del schema
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert retained < 30 * MB, f"{retained / MB:.0f} MB kept after validating 30 distinct 1 MB schemas"


def test_the_least_recently_used_go_first_and_long_keys_are_digests() -> None:
    cache: SizedCache[str] = SizedCache(max_bytes=100, max_entries=10)
    for name in ("a", "b", "c"):
        cache.get_or_build(name, lambda name=name: name.upper(), lambda _: 40)
    assert len(cache) == 2
    assert cache.size == 80
    assert cache.get_or_build("b", lambda: "rebuilt", lambda _: 40) == "B"  # kept, and now the most recent
    cache.get_or_build("d", lambda: "D", lambda _: 40)
    assert cache.get_or_build("c", lambda: "rebuilt", lambda _: 40) == "rebuilt"  # c went before b
    assert cache.get_or_build("big", lambda: "BIG", lambda _: 500) == "BIG"  # dearer than the budget: not kept
    assert cache.size <= 100
    long_key = "k" * 10_000
    assert cache_key(long_key).startswith("sha256:")
    assert len(cache_key(long_key)) < 80
    assert cache_key("short") == "short"
