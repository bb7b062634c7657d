"""Reading a model's answer against the out-edge schemas (plait/engine/contracts.py)."""

from __future__ import annotations

import json

from plait.engine.contracts import BoundSchema, OutputContract

TITLE = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}


def contract() -> OutputContract:
    return OutputContract((BoundSchema("bug", "1.0.0", TITLE),))


def test_a_raw_newline_inside_a_string_is_read_as_a_newline() -> None:
    """llama.cpp's JSON grammar lets a model write control characters inside strings; the
    value means what it says, and is still checked against the schema."""
    value, problems = contract().parse('{"title": "line one\nline two"}')
    assert (value, problems) == ({"title": "line one\nline two"}, [])
    value, problems = contract().parse('{"name": "a\tb"}')
    assert value == {"name": "a\tb"}
    assert problems == ["(root): 'title' is a required property (schema 'bug')"]


def test_text_that_is_not_json_is_a_problem_naming_where() -> None:
    value, problems = contract().parse('{"title": "unterminated')
    assert value is None
    assert problems == ["the answer is not JSON: Unterminated string starting at at line 1 column 11"]


def test_an_answer_is_read_as_json_loads_reads_it() -> None:
    """`parse_json` keeps one decoder instead of `json.loads(text, strict=False)`'s new one per
    call: the same values and the same refusals, a byte-order mark among them."""
    import json

    from plait.engine.contracts import parse_json

    for text in ('{"a": "x\ny"}', "\ufeff{}", "[1, 2", "1 2", "", " 3 ", '"\ud800"', "NaN", "1e400"):
        try:
            expected: tuple[object, list[str]] = (json.loads(text, strict=False), [])
        except json.JSONDecodeError as exc:
            expected = (None, [f"the answer is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"])
        assert repr(parse_json(text)) == repr(expected), text  # repr: NaN is not equal to itself


def test_a_fenced_answer_is_read_inside_the_fence() -> None:
    value, problems = contract().parse('```json\n{"title": "x"}\n```')
    assert (value, problems) == ({"title": "x"}, [])


def test_an_out_edge_schema_may_refer_to_the_graph_registry() -> None:
    from plait.engine.contracts import contract_for
    from plait.model.graph import GraphDef

    graph = GraphDef.model_validate(
        {
            "id": "g",
            "schemas": [
                {"id": "bug", "schema": {"type": "object", "properties": {"title": {"$ref": "words#/definitions/w"}}}},
                {"id": "words", "schema": {"definitions": {"w": {"type": "string", "minLength": 2}}}},
            ],
            "edges": [{"source": "a", "target": "END", "schema_id": "bug"}],
        }
    )
    bound = contract_for(graph, graph.edges)
    assert bound.violations({"title": "ok"}) == []
    assert bound.violations({"title": "x"}) == ["title: 'x' is too short (schema 'bug')"]


def test_a_reference_outside_the_graph_is_a_violation_and_is_never_fetched() -> None:
    from tests.compile.counting_server import counting_server

    with counting_server() as server:
        url = f"{server.url}/schema.json"
        bound = OutputContract((BoundSchema("bug", "1.0.0", {"properties": {"title": {"$ref": url}}}),))
        value, problems = bound.parse('{"title": "x"}')
    assert value == {"title": "x"}
    assert server.requests == []
    assert problems == [
        f"(schema): the schema's reference '{url}' cannot be resolved: only references inside the graph "
        "('#/...' and the ids of the graph's `schemas:`) are followed, nothing is fetched (schema 'bug')"
    ]


def test_the_model_is_shown_the_schemas_with_their_references_written_out() -> None:
    """The model cannot follow `$ref`: registry ids and local definitions are inlined (a recursion
    is cut to `{}`), in the fields' own order, while validation still follows the references."""
    from plait.engine.contracts import contract_for
    from plait.model.graph import GraphDef

    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/definitions/tree"}}}}
    graph = GraphDef.model_validate(
        {
            "id": "g",
            "schemas": [
                {
                    "id": "bug",
                    "schema": {
                        "type": "object",
                        "properties": {
                            "title": {"$ref": "words", "description": "short"},
                            "tree": {"$ref": "#/definitions/tree"},
                        },
                        "definitions": {"tree": tree},
                    },
                },
                {"id": "words", "schema": {"type": "string", "minLength": 2, "title": "w"}},
                {
                    "id": "other",
                    "schema": {"type": "object", "properties": {"z": {"type": "integer"}, "a": {"type": "integer"}}},
                },
            ],
            "edges": [
                {"source": "a", "target": "END", "schema_id": "bug"},
                {"source": "a", "target": "b", "schema_id": "other"},
            ],
        }
    )
    bound = contract_for(graph, graph.edges)
    shown = bound.response_format()
    assert shown is not None
    schema = shown["json_schema"]["schema"]
    assert "$ref" not in str(schema)
    assert "definitions" not in schema
    assert schema["properties"]["title"] == {"type": "string", "minLength": 2, "title": "w", "description": "short"}
    assert schema["properties"]["tree"] == {"type": "object", "properties": {"kids": {"type": "array", "items": {}}}}
    assert list(schema["properties"]) == ["title", "tree", "z", "a"]
    assert bound.violations({"title": "ok", "tree": {"kids": [{"kids": [{"kids": 1}]}]}, "z": 1}) == [
        "tree/kids/0/kids/0/kids: 1 is not of type 'array' (schema 'bug')"
    ]


def test_the_model_is_not_shown_how_its_answer_will_be_scored() -> None:
    """`x-eval` (how an evaluation scores a field) is left out of what the model is asked to
    produce, everywhere in the schema; a property that happens to be named so is kept, and so
    are values; the answer is still checked against the whole schema."""
    scored = {
        "type": "object",
        "x-eval": {"rule": "exact"},
        "properties": {
            "title": {"type": "string", "x-eval": {"rule": "meaning", "threshold": 0.9}},
            "x-eval": {"type": "string", "enum": ["x-eval"]},
            "chapters": {"type": "array", "items": {"type": "object", "properties": {
                "start": {"type": "number", "x-eval": {"tolerance": 2}}}}},
        },
        "required": ["title"],
    }  # fmt: skip
    shown = OutputContract((BoundSchema("chapters", "1.0.0", scored),)).combined()
    assert "x-eval" not in json.dumps({k: v for k, v in shown.items() if k != "properties"})
    assert shown["properties"]["title"] == {"type": "string"}
    assert shown["properties"]["x-eval"] == {"type": "string", "enum": ["x-eval"]}
    assert shown["properties"]["chapters"]["items"]["properties"]["start"] == {"type": "number"}
    assert OutputContract((BoundSchema("chapters", "1.0.0", scored),)).parse('{"title": 3}')[1]
