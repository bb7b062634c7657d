"""Run start and node outputs never fetch a schema reference and never backtrack on a pattern."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from plait.engine.run_input import StartError, check_input
from plait.model.enums import RunStatus
from plait.runs.start import resolve_graph
from plait.store import Store
from tests.compile.counting_server import counting_server
from tests.engine.test_engine import execute, graph_file, llm, nodes_of, script

WORDS = {"id": "words", "schema": {"definitions": {"word": {"type": "string", "minLength": 2}}}}
TITLED = {"type": "object", "properties": {"title": {"$ref": "words#/definitions/word"}}, "required": ["title"]}


def test_a_catastrophic_input_pattern_is_checked_at_run_start_in_linear_time(store: Store, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": "(a+)+$"}}}
    stored = resolve_graph(store, graph_file(tmp_path, [llm("a")], [], input_schema=schema))
    started = time.monotonic()
    with pytest.raises(StartError) as caught:
        check_input(stored, {"q": "a" * 5000 + "!"})
    assert time.monotonic() - started < 1.0
    assert any("does not match '(a+)+$'" in line for line in caught.value.details)


def test_a_graph_with_a_url_ref_is_refused_and_nothing_is_fetched(store: Store, tmp_path: Path) -> None:
    with counting_server() as server:
        schema = {"type": "object", "properties": {"q": {"$ref": f"{server.url}/q.json"}}}
        with pytest.raises(StartError) as caught:
            resolve_graph(store, graph_file(tmp_path, [llm("a")], [], input_schema=schema))
    assert server.requests == []
    assert len(caught.value.details) == 1
    assert "external_schema_ref" in caught.value.details[0]
    assert f"{server.url}/q.json" in caught.value.details[0]


def test_a_stored_input_schema_with_a_url_ref_is_a_refusal_not_a_fetch(store: Store, tmp_path: Path) -> None:
    """A graph stored before references were checked still starts no request."""
    stored = resolve_graph(store, graph_file(tmp_path, [llm("a")], []))
    with counting_server() as server:
        url = f"{server.url}/q.json"
        graph = stored.graph.model_copy(update={"input_schema": {"properties": {"q": {"$ref": url}}}})
        with pytest.raises(StartError) as caught:
            check_input(replace(stored, graph=graph), {"q": 1})
    assert server.requests == []
    assert any(url in line and "cannot be resolved" in line for line in caught.value.details)


def test_the_input_schema_may_refer_to_the_registry(store: Store, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"$ref": "words#/definitions/word"}}, "required": ["q"]}
    graph = graph_file(tmp_path, [llm("a")], [], input_schema=schema, schemas=[WORDS])
    stored = resolve_graph(store, graph)
    check_input(stored, {"q": "hello"})
    with pytest.raises(StartError) as caught:
        check_input(stored, {"q": "h"})
    assert caught.value.details == ["input q: 'h' is too short"]


def test_node_outputs_are_checked_against_registry_references(store: Store, tmp_path: Path) -> None:
    schemas = [{"id": "titled", "schema": TITLED}, WORDS]
    edges = [{"source": "a", "target": "END", "schema_id": "titled"}]
    graph = graph_file(tmp_path, [llm("a", max_retries=2)], edges, schemas=schemas)
    provider = script(
        tmp_path,
        [
            {"node": "a", "match": "Your answer was not valid", "output": {"title": "fixed"}},
            {"node": "a", "output": {"title": "x"}},
        ],
    )
    with counting_server() as server:
        outcome = execute(store, graph, provider)
    assert server.requests == []
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"title": "fixed"}
    node = nodes_of(store, outcome.run_id)["a"]
    assert node.attempts[0]["violations"] == ["title: 'x' is too short (schema 'titled')"]
