"""Schema patterns mean what ECMA-262 (JSON Schema's regex dialect) says, run on RE2, and a value
that is not Unicode text is a violation, never a crash (plait/compile/ecma_regex.py, schema_keywords.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from plait.compile import compile_data
from plait.compile.schema_validator import cached_validator, messages, schema_key
from plait.engine.run_input import StartError
from plait.model.enums import RunStatus
from plait.store import Store
from tests.engine.test_engine import execute, graph_file, llm, nodes_of, script

DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


def problems(schema: Any, value: Any) -> list[str]:
    return messages(cached_validator(schema_key(schema)), value)


# Each verdict is what JavaScript's RegExp with the `u` flag answers (checked with Node.js 20).
ECMA_VERDICTS = [
    ("^\\S+$", "a\u00a0b", False),
    ("^\\S+$", "ab", True),
    ("^\\s$", "\u00a0", True),
    ("^\\s$", "\ufeff", True),
    ("^\\s$", "\u2028", True),
    ("^\\s$", "\u2029", True),
    ("^\\s$", "\u3000", True),
    ("^\\s$", "\u1680", True),
    ("^\\s$", "\u2003", True),
    ("^\\s$", "\u000b", True),
    ("^\\s$", "\u200b", False),
    ("^\\s$", "\u0085", False),
    ("^[^\\S]$", "\u00a0", True),
    ("^[\\S]$", "\u00a0", False),
    ("^\\d$", "\u0663", False),
    ("^\\D$", "\u0663", True),
    ("^\\d$", "3", True),
    ("^\\w$", "é", False),
    ("^\\W$", "é", True),
    ("^\\w$", "_", True),
    ("^a$", "a\n", False),
    ("^.$", "\r", False),
    ("^.$", "\u2028", False),
    ("^.$", "😀", True),
    ("^\\u00e9$", "é", True),
    ("^\\uD83D\\uDE00$", "😀", True),
    ("^\\u{1F600}$", "😀", True),
    ("^[\\uD83D\\uDE00-\\uD83D\\uDE4F]$", "🙂", True),
    ("^[^]$", "\n", True),
    ("[]", "a", False),
    ("^\\p{Letter}+$", "héllo", True),
    ("^\\p{Letter}+$", "h3", False),
    ("^[\\p{L}\\d]+$", "é3", True),
    ("^\\P{Lu}$", "a", True),
    ("^\\p{Script=Greek}$", "α", True),
    ("^\\x41$", "A", True),
    ("^[\\b]$", "\b", True),
    ("^\\cJ$", "\n", True),
]


@pytest.mark.parametrize(("pattern", "text", "matches"), ECMA_VERDICTS)
def test_patterns_follow_ecma_262(pattern: str, text: str, matches: bool) -> None:
    found = problems({"type": "string", "pattern": pattern}, text)
    assert found == ([] if matches else [f"(root): {text!r} does not match {pattern!r}"])


def test_pattern_properties_and_additional_properties_follow_ecma_262() -> None:
    schema = {"patternProperties": {"^\\S+$": {"type": "integer"}}, "additionalProperties": False}
    assert problems(schema, {"ab": 1}) == []
    assert problems(schema, {"ab": "x"}) == ["ab: 'x' is not of type 'integer'"]
    assert problems(schema, {"a\u00a0b": 1}) == ["(root): 'a\\xa0b' does not match any of the regexes: '^\\\\S+$'"]


def test_unevaluated_properties_match_patterns_with_ecma_meaning() -> None:
    """jsonschema matched these with Python's `re` (backtracking, and `\\d` there takes any Unicode digit)."""
    schema = {"$schema": DRAFT_2020, "patternProperties": {"^\\d+$": {}}, "unevaluatedProperties": False}
    assert problems(schema, {"12": 1}) == []
    assert problems(schema, {"\u0663": 1}) == ["(root): Unevaluated properties are not allowed ('٣' was unexpected)"]
    nested = {"$schema": DRAFT_2020, "allOf": [{"patternProperties": {"^x": {}}}], "unevaluatedProperties": False}
    assert problems(nested, {"xa": 1}) == []
    assert problems(nested, {"ya": 1}) == ["(root): Unevaluated properties are not allowed ('ya' was unexpected)"]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a"},
        {"type": "object", "properties": {"s": {"pattern": "."}}},
        {"patternProperties": {"^a": {}}},
        {"patternProperties": {"^a": {}}, "additionalProperties": False},
        {"$schema": DRAFT_2020, "patternProperties": {"^a": {}}, "unevaluatedProperties": False},
    ],
)
def test_a_lone_surrogate_is_a_violation_not_an_exception(schema: dict[str, Any]) -> None:
    """RE2 matches UTF-8: a lone surrogate (valid JSON, not Unicode text) raised UnicodeEncodeError."""
    value: Any = "a\ud800" if schema.get("type") == "string" else {"a\ud800": 1}
    if "properties" in schema:
        value = {"s": "a\ud800"}
    found = problems(schema, value)
    assert found
    assert all("lone surrogate" in line or "unexpected" in line or "regexes" in line for line in found), found


def test_a_lone_surrogate_answer_is_retried_like_any_invalid_answer(store: Store, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"text": {"type": "string", "pattern": "^\\S+$"}}, "required": ["text"]}
    edges = [{"source": "a", "target": "END", "schema_id": "word"}]
    graph = graph_file(tmp_path, [llm("a", max_retries=1)], edges, schemas=[{"id": "word", "schema": schema}])
    provider = script(
        tmp_path,
        [
            {"node": "a", "match": "Your answer was not valid", "output": {"text": "fixed"}},
            {"node": "a", "text": '{"text": "a\\ud800b"}'},
        ],
    )
    outcome = execute(store, graph, provider)
    assert outcome.status == RunStatus.COMPLETED, outcome.error
    node = nodes_of(store, outcome.run_id)["a"]
    assert len(node.attempts) == 2
    assert any("lone surrogate" in v for v in node.attempts[0]["violations"])

    never = script(tmp_path, [{"node": "a", "text": '{"text": "a\\ud800b"}'}])
    failed = execute(store, graph, never)
    assert failed.status == RunStatus.FAILED
    assert failed.error is not None
    node = nodes_of(store, failed.run_id)["a"]
    assert node.error["kind"] == "schema"  # what every answer that breaks its schema fails as, not `internal`
    assert len(node.attempts) == 2


@pytest.mark.parametrize(
    ("pattern", "reason", "hint"),
    [
        ("^(?=a)b", "lookahead (?=", "without lookaround or backreferences"),
        ("(?<!x)y", "lookbehind (?<!", "without lookaround or backreferences"),
        ("(a)\\1", "backreference \\1", "without lookaround or backreferences"),
        ("\\k<n>", "named backreference", "without lookaround or backreferences"),
        ("\\pL", "\\p must be followed by a property in braces", "\\p{L}"),
        ("\\p{Alphabetic}", "\\p{Alphabetic} is not one RE2 knows", "\\p{L}"),
        ("(?i)abc", "inline flags are not supported", "[Aa]"),
        ("\\Aabc\\z", "\\A is not an escape of JSON Schema's regex dialect", "^ and $ are the start and the end"),
        ("a{1001}", "invalid repetition size", "up to 1000"),
        ("\\uD800", "lone surrogate (U+D800)", "\\uD83D\\uDE00"),
        ("[z-a]", "out of order", "lower end first"),
        ("[\\d-z]", "cannot start or end with \\d", "put '-' last"),
    ],
)
def test_every_refused_pattern_says_what_to_write_instead(pattern: str, reason: str, hint: str) -> None:
    graph = {
        "plait": 1,
        "id": "g",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}},
        "nodes": [{"id": "a", "type": "TRANSFORM", "transform_expr": "input"}],
    }
    errors = compile_data(graph).errors
    assert [e.code for e in errors] == ["unsupported_regex"]
    assert reason in errors[0].message
    assert hint in (errors[0].hint or "")


@pytest.mark.parametrize("pattern", ["\\u00e9", "[^]", "[]", "\\p{Letter}", "^[\\uD83D\\uDE00]$"])
def test_ecma_patterns_that_re2_reads_differently_are_accepted(pattern: str) -> None:
    graph = {
        "plait": 1,
        "id": "g",
        "input_schema": {"type": "object", "properties": {"q": {"type": "string", "pattern": pattern}}},
        "nodes": [{"id": "a", "type": "TRANSFORM", "transform_expr": "input"}],
    }
    assert compile_data(graph).errors == []


def test_boolean_schemas_are_schemas_wherever_a_schema_is(store: Store, tmp_path: Path) -> None:
    graph = {
        "plait": 1,
        "id": "g",
        "input_schema": True,
        "schemas": [
            {"id": "anything", "schema": True},
            {"id": "nothing", "schema": False},
            {"id": "parts", "schema": {"type": "object", "properties": {"a": True, "b": False}, "items": [True]}},
        ],
        "nodes": [{"id": "a", "type": "TRANSFORM", "transform_expr": "input"}],
        "edges": [
            {"source": "a", "target": "END", "schema_id": "anything"},
            {"source": "a", "target": "END", "schema_id": "parts", "id": "p"},
        ],
    }
    assert compile_data(graph).errors == []
    assert problems(True, {"x": 1}) == []
    assert problems(False, 1) == ["(root): False schema does not allow 1"]
    # jsonschema reports a `false` subschema at the root
    assert problems({"properties": {"b": False}}, {"b": 1}) == ["(root): False schema does not allow 1"]

    refused = graph_file(tmp_path, [llm("a")], [], input_schema=False)
    with pytest.raises(StartError) as caught:  # refused before anything is created
        execute(store, refused, script(tmp_path, []), {"q": 1})
    assert caught.value.details == ["input (root): False schema does not allow {'q': 1}"]

    nothing = graph_file(
        tmp_path,
        [llm("a", max_retries=0)],
        [{"source": "a", "target": "END", "schema_id": "never"}],
        schemas=[{"id": "never", "schema": False}],
    )
    failed = execute(store, nothing, script(tmp_path, [{"node": "a", "output": {"text": "x"}}]))
    assert failed.status == RunStatus.FAILED
    assert nodes_of(store, failed.run_id)["a"].error["kind"] == "schema"
