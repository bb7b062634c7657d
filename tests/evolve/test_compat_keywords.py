"""The classifier against generated data on the corpus's pairs of values, strings, arrays,
annotations, combinators, conditionals, references and Draft 7, and the corpus itself: its size,
the keywords it covers, its schemas, the classifier's agreement with the hand-written levels.

Each pair is classified, then the oracle (`compat_oracle`) draws values valid under the old
schema and validates them under the new one: a patch or minor verdict it breaks is unsafe.
The object pairs are in `test_compat_objects.py` (a second file, so two workers share the work).
"""

from __future__ import annotations

from typing import Any

import pytest

from plait.compile.schemas import check_json_schema
from plait.evolve.classify import Level
from tests.evolve.compat_corpus import ANNOTATIONS, ARRAYS, ENUMS, NUMBERS, STRINGS, TYPES, Pair, corpus
from tests.evolve.compat_corpus_structure import DRAFT_7, LOGIC, REFS
from tests.evolve.compat_report import problems, rows

PAIRS = [*ANNOTATIONS, *TYPES, *ENUMS, *NUMBERS, *STRINGS, *ARRAYS, *LOGIC, *REFS, *DRAFT_7]
KEYWORDS = (
    *("type", "enum", "const", "multipleOf", "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"),
    *("maxLength", "minLength", "pattern", "format", "items", "prefixItems", "contains", "minContains"),
    *("maxContains", "maxItems", "minItems", "uniqueItems", "properties", "patternProperties"),
    *("additionalProperties", "propertyNames", "required", "dependentRequired", "dependentSchemas"),
    *("maxProperties", "minProperties", "unevaluatedProperties", "unevaluatedItems", "allOf", "anyOf"),
    *("oneOf", "not", "if", "then", "else", "$ref", "$defs", "title", "description", "default"),
    *("examples", "deprecated", "readOnly", "writeOnly", "$comment"),
)
KNOWN_OVER_CAUTIOUS = {
    "integer minimum 0.5 to 1",  # integers only: the bounds admit the same values
    "multipleOf 0.5 to 0.25",  # float steps are not compared (jsonschema divides in floating point)
    "pattern rewritten alike",  # regexes are not compared for equivalence
    "allOf flattened",  # a one-branch allOf is not merged into its parent
}
"""Pairs the classifier calls major although no value breaks: conservative, never unsafe."""


def keywords(schema: Any) -> set[str]:
    if isinstance(schema, dict):
        return set(schema).union(*(keywords(v) for k, v in schema.items() if k not in ("enum", "const")))
    if isinstance(schema, list):
        return set().union(*(keywords(v) for v in schema))
    return set()


@pytest.mark.parametrize("pair", PAIRS, ids=[p.id for p in PAIRS])
def test_no_generated_value_breaks_a_safe_verdict(pair: Pair) -> None:
    assert problems(pair) == []


def test_the_corpus_has_200_pairs_covering_every_keyword_in_both_directions() -> None:
    pairs = corpus()
    assert len(pairs) >= 200
    assert len({p.id for p in pairs}) == len(pairs)
    for keyword in KEYWORDS:  # in an old schema and in a new one
        assert any(keyword in keywords(p.old) - keywords(p.new) for p in pairs), f"{keyword} never removed"
        assert any(keyword in keywords(p.new) - keywords(p.old) for p in pairs), f"{keyword} never added"
    levels = {p.expected for p in pairs}
    assert {Level.PATCH, Level.MINOR, Level.MAJOR} <= levels


@pytest.mark.parametrize("side", ["old", "new"])
def test_every_corpus_schema_is_a_valid_schema(side: str) -> None:
    for pair in corpus():
        assert check_json_schema(getattr(pair, side)) == [], pair.id


def test_the_classifier_agrees_with_the_hand_written_levels() -> None:
    found = rows(corpus(), max_examples=None)
    assert [r.pair.id for r in found if r.unsafe] == []
    assert {r.pair.id for r in found if r.over_cautious} <= KNOWN_OVER_CAUTIOUS
    assert sum(r.agrees for r in found) >= 0.97 * len(found)
