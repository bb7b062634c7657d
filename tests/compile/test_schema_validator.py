"""The validators Plait builds fetch nothing and run regexes in linear time (plait/compile/schema_validator.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft7Validator

from plait.compile import schema_validator
from plait.compile.schema_validator import (
    NO_REGISTRY,
    cached_validator,
    messages,
    registry_key,
    schema_key,
    violations,
)
from plait.model.graph import SchemaEntry
from tests.compile.counting_server import CountingServer, counting_server

WORDS = SchemaEntry.model_validate({"id": "words", "schema": {"definitions": {"word": {"type": "string"}}}})


@pytest.fixture
def server() -> Iterator[CountingServer]:
    with counting_server() as running:
        yield running
    assert running.requests == [], "a schema reference was fetched"


def problems(schema: dict[str, Any], value: Any, registry: str = NO_REGISTRY) -> list[str]:
    return messages(cached_validator(schema_key(schema), registry), value)


def test_a_catastrophic_pattern_is_checked_in_linear_time() -> None:
    """`(a+)+$` on 25 characters took Python's re about 2 s, doubling with each one more."""
    started = time.monotonic()
    found = problems({"type": "string", "pattern": "(a+)+$"}, "a" * 5000 + "!")
    assert time.monotonic() - started < 1.0
    assert len(found) == 1
    assert found[0].endswith("does not match '(a+)+$'")
    assert problems({"type": "string", "pattern": "(a+)+$"}, "aaaa") == []


def test_catastrophic_pattern_properties_are_checked_in_linear_time() -> None:
    schema = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}}, "additionalProperties": False}
    started = time.monotonic()
    found = problems(schema, {"a" * 5000 + "!": 1, "aaa": "x"})
    assert time.monotonic() - started < 1.0
    assert sorted(found) == sorted(
        [f"(root): '{'a' * 5000}!' does not match any of the regexes: '^(a+)+$'", "aaa: 'x' is not of type 'integer'"]
    )


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False}, {"xa": 1, "b": 2, "c": 3}),
        ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "b": 2}),
        ({"properties": {"a": {}}, "additionalProperties": {"type": "string"}}, {"a": 1, "b": 2}),
        ({"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"}, "25:61"),
        ({"patternProperties": {"^x": {"type": "integer"}, "y$": {"minimum": 3}}}, {"xy": 2, "zy": "s"}),
    ],
)
def test_the_messages_are_jsonschemas_own(schema: dict[str, Any], value: Any) -> None:
    """RE2 changes how fast patterns run, not what a valid schema accepts or how it says so."""
    expected = sorted(
        f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
        for e in Draft7Validator(schema).iter_errors(value)
    )
    assert expected
    assert sorted(problems(schema, value)) == expected


def test_a_pattern_re2_cannot_run_is_a_violation_not_an_exception() -> None:
    """A schema Plait did not validate (an MCP server's) may still hold one."""
    found = problems({"type": "string", "pattern": "(?=a)a"}, "a")
    assert found == ["(root): the schema's pattern '(?=a)a' cannot be checked: a lookahead (?=...) is not supported"]


@pytest.mark.parametrize("keyword", ["$ref", "$schema", "$id"])
def test_a_url_in_a_schema_is_never_fetched(server: CountingServer, keyword: str) -> None:
    url = f"{server.url}/schema.json"
    schema = {"type": "object", "properties": {"a": {"items": {"allOf": [{keyword: url, "$ref": f"{url}#/x"}]}}}}
    found = problems(schema, {"a": [1]})
    assert found == [
        f"(schema): the schema's reference '{url}#/x' cannot be resolved: only references inside the graph "
        "('#/...' and the ids of the graph's `schemas:`) are followed, nothing is fetched"
    ]


def test_registry_references_resolve_inside_the_graph() -> None:
    registry = registry_key([WORDS])
    schema = {"type": "object", "properties": {"w": {"$ref": "words#/definitions/word"}, "all": {"$ref": "words"}}}
    assert problems(schema, {"w": "hello", "all": {}}, registry) == []
    assert problems(schema, {"w": 3}, registry) == ["w: 3 is not of type 'string'"]


def test_local_references_resolve() -> None:
    schema = {"properties": {"n": {"$ref": "#/definitions/n"}}, "definitions": {"n": {"type": "integer"}}}
    assert problems(schema, {"n": 1}) == []
    assert problems(schema, {"n": "1"}) == ["n: '1' is not of type 'integer'"]


def test_validators_are_cached_by_schema_and_registry() -> None:
    other = SchemaEntry.model_validate({"id": "words", "schema": {"definitions": {"word": {"type": "integer"}}}})
    key = schema_key({"$ref": "words#/definitions/word"})
    assert cached_validator(key, registry_key([WORDS])) is cached_validator(key, registry_key([WORDS]))
    assert messages(cached_validator(key, registry_key([WORDS])), 1) == ["(root): 1 is not of type 'string'"]
    assert messages(cached_validator(key, registry_key([other])), 1) == []


def test_a_value_found_valid_is_not_checked_again_and_its_lookalikes_are(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node's output is checked against its out-edge's schema and again, as the next node's
    input, against the same one: the second time is remembered. `True == 1` in Python, but not
    in JSON Schema: values are told apart by their JSON text. Refusals are not remembered."""
    checked: list[Any] = []
    real = schema_validator.messages
    monkeypatch.setattr(schema_validator, "messages", lambda v, value: checked.append(value) or real(v, value))
    key = schema_key({"type": "object", "properties": {"n": {"type": "integer"}}, "$comment": str(uuid.uuid4())})
    assert violations(key, NO_REGISTRY, {"n": 1}) == []
    assert violations(key, NO_REGISTRY, {"n": 1}) == []
    assert checked == [{"n": 1}]
    assert violations(key, NO_REGISTRY, {"n": True}) != []
    assert violations(key, NO_REGISTRY, {"n": True}) != []
    assert violations(key, NO_REGISTRY, {"n": 1.5}) != []
    assert len(checked) == 4
    assert violations(key, registry_key([WORDS]), {"n": 1}) == []  # another registry: checked under it
    assert len(checked) == 5
