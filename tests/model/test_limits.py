"""The value limits: every problem is found with its path, and the quick check that lets clean
values through never lets a bad one through."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plait.model import limits
from plait.model.limits import MAX_DEPTH, storable, value_problem

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.sampled_from(["\ud800", "ok \udfff", "é"])
    | st.integers(4290, 4310).map(lambda digits: 10**digits - 1)  # around the most digits an int may have
)
_KEYS = st.text(max_size=5) | st.sampled_from(["\ud801", "a"]) | st.integers(0, 3)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=4) | st.tuples(children, children)
    ),
    max_leaves=30,
)


def _walk_only(value: Any, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(limits, "_fine", lambda *args: False)
        return value_problem(value, **options)


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_the_quick_check_agrees_with_the_full_walk(value: Any) -> None:
    with pytest.MonkeyPatch.context() as patch:
        assert value_problem(value) == _walk_only(value, patch)
        assert value_problem(value, max_depth=2) == _walk_only(value, patch, max_depth=2)


@pytest.mark.parametrize(
    ("value", "path", "words"),
    [
        ({"a": [1, {"b": float("nan")}]}, ("a", 1, "b"), "not a JSON number"),
        ({"a": ["fine", "bad \ud800"]}, ("a", 1), "lone surrogate"),
        ({"a": {3: "x"}}, ("a",), "keys must be strings"),
        ([[10**4301]], (0, 0), "more than 4300 digits"),
        ({"a": {1, 2}}, ("a",), "a set is not a JSON value"),
    ],
)
def test_a_problem_is_reported_at_its_path(value: Any, path: tuple[Any, ...], words: str) -> None:
    problem = value_problem(value)
    assert problem is not None
    assert problem.path == path
    assert words in problem.message


def test_nesting_past_the_limit_is_reported_without_recursing_that_deep() -> None:
    value: Any = "leaf"
    for _ in range(100_000):
        value = [value]
    problem = value_problem(value)
    assert problem is not None
    assert len(problem.path) == MAX_DEPTH
    assert value_problem(_nest(MAX_DEPTH)) is None


def test_storable_keeps_clean_values_as_they_are_and_mends_bad_ones() -> None:
    clean = {"messages": [{"role": "user", "content": "é" * 10}], "n": 3, "ok": True, "none": None}
    assert storable(clean) is clean
    assert storable({"a": "x\ud800"}) == {"a": "x\\ud800"}


def _text_keys(value: Any) -> Any:
    """`value` with its keys as JSON text writes them (the strategy's keys are text or numbers)."""
    if isinstance(value, dict):
        return {str(k): _text_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_text_keys(v) for v in value]
    return value


@settings(max_examples=400, deadline=None)
@given(_VALUES)
def test_a_record_the_text_check_vouches_for_is_one_the_walk_finds_nothing_wrong_with(value: Any) -> None:
    """`fine_text` decides from a record's JSON text alone; it must never let through what the
    walk refuses (keys aside: a record stores them as text, as JSON writes them)."""
    for depth in (MAX_DEPTH, 2):
        text = limits.fine_text(value, max_depth=depth)
        if text is not None:
            assert value_problem(_text_keys(value), max_depth=depth) is None
            assert json.loads(text) == json.loads(json.dumps(value, ensure_ascii=False))


def test_the_text_check_leaves_to_the_walk_what_it_cannot_tell() -> None:
    assert limits.fine_text({"a": [1, 2]}) == '{"a":[1,2]}'
    assert limits.fine_text({"a": "x\ud800"}) is None
    assert limits.fine_text({"a": float("inf")}) is None
    assert limits.fine_text({"a": {1, 2}}) is None
    assert limits.fine_text(_nest(MAX_DEPTH + 1)) is None
    assert limits.fine_text(["{" * (MAX_DEPTH + 1)]) is None  # brackets in text count too: the walk decides
    assert storable(["{" * (MAX_DEPTH + 1)]) == ["{" * (MAX_DEPTH + 1)]


def _nest(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"k": value}
    return value
