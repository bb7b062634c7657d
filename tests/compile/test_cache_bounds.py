"""What the compiler and the renderer remember is bounded by bytes: many distinct large
expressions and templates (as a client sending graphs to be validated can make) leave each cache
within its bound, and the texts themselves are not kept (long ones are keyed by their digest)."""

from __future__ import annotations

import gc
import tracemalloc

from plait.caches import ByteBoundCache, cache_stats, text_key
from plait.compile.compiler import compile_data
from plait.compile.templates import parse_template
from plait.engine.render import render

SIZE = 500_000
COUNT = 48
"""Texts of half a megabyte each: the first half of them fill every cache to its bound, the
second half shows that what is held then stops growing."""


def graph(i: int) -> dict[str, object]:
    expression = f"({{n: {i}, pad: '" + "x" * SIZE + "'}).n"
    # a filter makes it a Jinja template: plain `{{ a.b }}` substitutions never reach the compiled cache
    template = f"Draft {i}: " + "y" * SIZE + " {{ input.text | trim }}"
    return {
        "id": f"big{i}",
        "nodes": [
            {"id": "t", "type": "TRANSFORM", "transform_expr": expression},
            {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": template},
        ],
        "edges": [{"source": "t", "target": "a"}],
    }


def test_distinct_large_texts_leave_the_caches_within_their_bounds_and_are_not_kept() -> None:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(COUNT):
            if i == COUNT // 2:
                gc.collect()
                half = tracemalloc.get_traced_memory()[0] - before
            data = graph(i)
            assert compile_data(data).valid
            template = parse_template(str(data["nodes"][1]["user_prompt_tpl"]))  # type: ignore[index]
            assert render(template, {"input": {"text": "hi"}}).endswith(" hi")
            del data, template
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    sent = COUNT * 2 * SIZE
    assert kept - half < sent // 2 // 10, f"the second {COUNT // 2} graphs added {kept - half:,} bytes to what is held"
    stats = cache_stats()
    for name in ("JavaScript syntax checks", "parsed templates", "compiled templates"):
        assert stats[name][0] > 0, f"the {name} cache was not used: the test misses its path"
    assert stats["parsed templates"][1] <= 16 << 20
    assert stats["compiled templates"][1] <= 64 << 20
    assert stats["JavaScript syntax checks"][1] <= 4 << 20
    assert kept < sent // 3, f"{kept:,} bytes kept of {sent:,} sent"


def test_the_least_recently_used_go_first_and_long_keys_are_digests() -> None:
    cache: ByteBoundCache[str] = ByteBoundCache("test", 2_500, weigh=lambda value, _: len(value))
    for name in "abc":
        cache.put((name,), "v" * 500)
    assert cache.find(("a",)) is not None  # a is now the most recently used
    cache.put(("d",), "v" * 500)  # over the bound: b, the least recently used, goes
    assert [cache.find((k,)) is not None for k in "abcd"] == [True, False, True, True]
    assert cache.bytes <= 2_500
    cache.put(("huge",), "v" * 10_000)  # heavier than the whole bound: not kept, nothing evicted
    assert cache.find(("huge",)) is None
    assert len(cache) == 3
    long_text = "z" * 1_000
    assert text_key(long_text) != long_text
    assert len(text_key(long_text)) == 32  # type: ignore[arg-type]
