"""Properties over values generated from schemas: a value always passes against itself, and every
score is within 0..1, under each schema of a set that covers every rule."""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plait.evaluation import CaseScore, score
from tests.schema_values import from_schema

CHAPTER = {
    "type": "object",
    "required": ["start", "title"],
    "properties": {
        "start": {"type": "integer", "minimum": 0, "x-eval": {"critical": True}},
        "title": {"type": "string", "maxLength": 20},
        "speakers": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 8}},
    },
}
SCHEMAS: dict[str, dict[str, Any]] = {
    "scalars": {
        "type": "object",
        "required": ["n", "i", "b", "e"],
        "properties": {
            "n": {"type": "number"},
            "i": {"type": "integer"},
            "b": {"type": "boolean"},
            "e": {"enum": ["red", "green", 3, None]},
            "c": {"const": {"k": [1, 2]}},
            "z": {"type": "null"},
        },
    },
    "strings": {
        "type": "object",
        "required": ["free"],
        "properties": {
            "free": {"type": "string"},
            "email": {"type": "string", "format": "email"},
            "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{1,4}$"},
            "words": {"type": "string", "x-eval": {"rule": "words", "threshold": 0.5}},
            "exact": {"type": "string", "x-eval": {"rule": "exact"}},
            "loose": {"type": "number", "x-eval": {"tolerance": 0.5, "weight": 3}},
        },
    },
    "arrays": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "maxItems": 6, "items": {"type": "string", "maxLength": 3}},
            "numbers": {"type": "array", "maxItems": 6, "items": {"type": "number"}, "x-eval": {"rule": "sequence"}},
            "chapters": {"type": "array", "maxItems": 4, "items": CHAPTER},
            "grid": {
                "type": "array",
                "maxItems": 3,
                "items": {"type": "array", "maxItems": 3, "items": {"type": "integer"}},
            },
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
        },
    },
    "refs": {
        "type": "object",
        "definitions": {"chapter": CHAPTER, "money": {"type": "number", "x-eval": {"relative_tolerance": 0.01}}},
        "required": ["chapters", "total"],
        "properties": {
            "chapters": {
                "type": "array",
                "maxItems": 4,
                "items": {"$ref": "#/definitions/chapter"},
                "x-eval": {"rule": "set"},
            },
            "total": {"$ref": "#/definitions/money", "x-eval": {"critical": True}},
        },
    },
    "combinators": {
        "type": "object",
        "properties": {
            "either": {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "integer"}]},
            "any": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
            "nullable": {"type": ["string", "null"]},
            "open": {},
            "nested": {
                "type": "object",
                "properties": {"deep": {"type": "object", "properties": {"x": {"type": "number"}}}},
                "additionalProperties": {"type": "integer"},
            },
        },
        "additionalProperties": True,
    },
    "root array": {
        "type": "array",
        "maxItems": 5,
        "items": {"type": "object", "properties": {"v": {"type": "string"}}},
    },
    "root string": {"type": "string"},
}


def similarity(a: str, b: str) -> float:
    """A stand-in meaning similarity: any cosine from -1 to 1, the same for the same pair."""
    return (zlib.crc32(f"{a}\x00{b}".encode(errors="surrogatepass")) % 2001) / 1000 - 1


def in_range(result: CaseScore) -> bool:
    return 0.0 <= result.score <= 1.0 and all(0.0 <= f.score <= 1.0 for f in result.fields)


QUICK = settings(
    max_examples=60,
    deadline=None,
    # hypothesis-jsonschema discards many drafts of an object: slower, not weaker (each test still gets 60 examples)
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
VALUES = {name: from_schema(schema) for name, schema in SCHEMAS.items()}


@pytest.mark.parametrize("name", SCHEMAS)
@QUICK
@given(data=st.data(), with_similarity=st.booleans())
def test_a_value_passes_against_itself(name: str, data: st.DataObject, with_similarity: bool) -> None:
    value = data.draw(VALUES[name], label="value")
    result = score(SCHEMAS[name], value, value, similarity=similarity if with_similarity else None)
    assert result.passed
    assert result.score == 1.0
    assert all(f.passed for f in result.fields), [f for f in result.fields if not f.passed]


@pytest.mark.parametrize("name", SCHEMAS)
@QUICK
@given(data=st.data(), with_similarity=st.booleans())
def test_scores_are_within_0_and_1(name: str, data: st.DataObject, with_similarity: bool) -> None:
    expected = data.draw(VALUES[name], label="expected")
    actual = data.draw(VALUES[name], label="actual")
    result = score(SCHEMAS[name], expected, actual, similarity=similarity if with_similarity else None)
    assert in_range(result)
    assert result == score(SCHEMAS[name], expected, actual, similarity=similarity if with_similarity else None)


@QUICK
@given(
    from_schema(SCHEMAS["arrays"]),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
        max_leaves=8,
    ),
)
def test_any_json_as_the_actual_value_scores_within_0_and_1(expected: Any, actual: Any) -> None:
    assert in_range(score(SCHEMAS["arrays"], expected, actual))
