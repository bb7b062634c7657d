"""Schemas may only refer inside the graph, and only use regexes RE2 runs (plait/compile/schema_refs.py).

Every case runs against a real loopback HTTP server: a reference that escaped the graph would be
fetched from it, so each test also asserts it received no request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from plait.compile import CompileResult, Diagnostic, compile_data
from tests.compile.counting_server import CountingServer, counting_server

ANSWER = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


@pytest.fixture
def server() -> Iterator[CountingServer]:
    with counting_server() as running:
        yield running
    assert running.requests == [], "a schema reference was fetched"


def graph(
    answer: dict[str, Any] | None = None,
    *,
    input_schema: dict[str, Any] | None = None,
    parameters: dict[str, Any] | None = None,
    extra: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    node: dict[str, Any] = {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "go"}
    if parameters is not None:
        node["tools"] = [{"name": "note", "handler": "CONTEXT_WRITE", "parameters": parameters}]
    data: dict[str, Any] = {
        "id": "g",
        "schemas": [{"id": "answer", "schema": answer or ANSWER}, *extra],
        "nodes": [node],
        "edges": [{"id": "a_out", "source": "a", "target": "END", "schema_id": "answer"}],
    }
    if input_schema is not None:
        data["input_schema"] = input_schema
    return data


def only_error(result: CompileResult, code: str) -> Diagnostic:
    assert [d.code for d in result.errors] == [code], "\n".join(d.format() for d in result.errors)
    assert result.errors[0].hint
    return result.errors[0]


def deep(ref_key: str, value: str) -> dict[str, Any]:
    """`{ref_key: value}` nested inside properties, items, allOf and definitions."""
    return {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "list": {"type": "array", "items": {"allOf": [{"$ref": "#/definitions/inner"}]}},
        },
        "definitions": {"inner": {"properties": {"x": {ref_key: value}}}},
    }


@pytest.mark.parametrize("key", ["$ref", "$id", "$schema"])
def test_a_url_nested_deep_in_an_edge_schema_is_a_compile_error_naming_edge_and_url(
    server: CountingServer, key: str
) -> None:
    url = f"{server.url}/schema.json"
    diag = only_error(compile_data(graph(deep(key, url))), "external_schema_ref")
    assert diag.edge_id == "a_out"
    assert "schema 'answer' (on edge a_out)" in diag.message
    assert f"definitions/inner/properties/x/{key}" in diag.message
    assert url in diag.message


def test_a_ref_to_a_url_in_the_input_schema_is_refused(server: CountingServer) -> None:
    url = f"{server.url}/input.json"
    schema = {"type": "object", "properties": {"q": {"$ref": url}}}
    diag = only_error(compile_data(graph(input_schema=schema)), "external_schema_ref")
    assert diag.message.startswith("input_schema at 'properties/q/$ref'")
    assert url in diag.message


def test_a_ref_to_a_url_in_tool_parameters_is_refused(server: CountingServer) -> None:
    url = f"{server.url}/args.json"
    diag = only_error(compile_data(graph(parameters={"$ref": url})), "external_schema_ref")
    assert diag.node_id == "a"
    assert "parameters of tool 'note'" in diag.message
    assert url in diag.message


D2020, D4 = "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-04/schema#"
WAYS_OUT: list[tuple[Callable[[str], dict[str, Any]], str]] = [
    (lambda url: {"$schema": D2020, "$defs": {"m": {"$dynamicRef": url + "#m"}}}, "$defs/m/$dynamicRef"),
    (lambda url: {"$schema": D4, "id": url, "type": "object"}, "id"),
    (lambda url: {"properties": {"text": {"$schema": url}}}, "properties/text/$schema"),
    (lambda url: {"not": {"$ref": url}}, "not/$ref"),
    (lambda url: {"$ref": "other.json"}, "$ref"),
    (lambda url: {"$ref": "file:///etc/passwd"}, "$ref"),
]


@pytest.mark.parametrize(("schema", "where"), WAYS_OUT)
def test_every_way_out_of_the_graph_is_refused(
    server: CountingServer, schema: Callable[[str], dict[str, Any]], where: str
) -> None:
    diag = only_error(compile_data(graph(schema(f"{server.url}/s.json"))), "external_schema_ref")
    assert f"at '{where}'" in diag.message


def test_an_unknown_root_schema_dialect_is_refused_without_being_fetched(server: CountingServer) -> None:
    diag = only_error(compile_data(graph({"$schema": f"{server.url}/dialect", **ANSWER})), "invalid_json_schema")
    assert "unknown $schema" in diag.message


def test_registry_and_local_references_are_valid() -> None:
    schema = {
        "type": "object",
        "properties": {
            "text": {"$ref": "words#/definitions/word"},
            "more": {"$ref": "#/definitions/many"},
            "same": {"$ref": "words"},
        },
        "definitions": {"many": {"type": "array", "items": {"$ref": "words#/definitions/word"}}},
        "required": ["text"],
    }
    words = {"id": "words", "schema": {"type": "object", "definitions": {"word": {"type": "string"}}}}
    result = compile_data(graph(schema, input_schema={"$ref": "words"}, extra=(words,)))
    assert result.errors == []


def test_a_reference_that_does_not_resolve_is_refused() -> None:
    words = {"id": "words", "schema": {"definitions": {"word": {"type": "string"}}}}
    schema = {"properties": {"a": {"$ref": "words#/definitions/wrod"}, "b": {"$ref": "#/definitions/none"}}}
    result = compile_data(graph(schema, extra=(words,)))
    assert [d.code for d in result.errors] == ["unresolved_schema_ref", "unresolved_schema_ref"]
    assert "'words#/definitions/wrod'" in result.errors[0].message


def test_tool_parameters_cannot_name_registry_schemas_the_model_never_sees() -> None:
    diag = only_error(compile_data(graph(parameters={"$ref": "answer"})), "external_schema_ref")
    assert "'#/definitions/" in (diag.hint or "")


def test_data_that_looks_like_a_reference_is_not_one(server: CountingServer) -> None:
    """A property named `$ref`, or a URL inside `const` / `enum` / `default`, is data, not a schema."""
    url = f"{server.url}/x"
    schema = {
        "type": "object",
        "properties": {"$ref": {"type": "string"}, "$id": {"type": "string"}, "text": {"type": "string"}},
        "default": {"$ref": url},
        "enum": [{"$ref": url, "text": "x"}],
    }
    assert compile_data(graph(schema)).errors == []


@pytest.mark.parametrize(
    ("keyword", "pattern"), [("pattern", "^(?=a)b"), ("pattern", "(a)\\1"), ("patternProperties", "(?<!x)y")]
)
def test_a_pattern_re2_cannot_run_is_refused_at_validate(keyword: str, pattern: str) -> None:
    inner: dict[str, Any] = {"pattern": pattern} if keyword == "pattern" else {"patternProperties": {pattern: {}}}
    schema = {"type": "object", "properties": {"text": {"type": "string", **inner}}}
    diag = only_error(compile_data(graph(schema)), "unsupported_regex")
    assert f"properties/text/{keyword}" in diag.message
    assert "RE2" in (diag.hint or "")
