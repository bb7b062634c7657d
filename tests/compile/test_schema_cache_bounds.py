"""Schema caches are bounded by the bytes they hold, not by their number of entries (the
byte-bounded caches of plait/caches.py as schema_validator.py, schemas.py and schema_keywords.py
use them)."""

from __future__ import annotations

import gc
import tracemalloc

from plait.compile.schema_validator import cached_validator, messages, schema_key
from plait.compile.schemas import check_json_schema

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
