"""The compiler's view of an LLM_CALL's `answer_schema`: a path into the run input that the
graph's `input_schema` allows (the schema itself comes with each run)."""

from __future__ import annotations

from typing import Any

import pytest

from plait.compile import CompileResult, compile_data

SCHEMA = {"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"]}
INPUT = {
    "type": "object",
    "properties": {
        "answer_schema": {"type": "object"},
        "text": {"type": "string"},
        "ctx": {"type": "object", "properties": {"schema": {}}},
    },
}


def compiled(path: Any, input_schema: dict[str, Any] | None = INPUT) -> CompileResult:
    data: dict[str, Any] = {
        "id": "g",
        "schemas": [{"id": "out", "schema": SCHEMA}],
        "nodes": [{"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "go", "answer_schema": path}],
        "edges": [{"source": "a", "target": "END", "schema_id": "out"}],
    }
    if input_schema is not None:
        data["input_schema"] = input_schema
    return compile_data(data)


@pytest.mark.parametrize("path", ["input.answer_schema", "input.ctx.schema", "input.ctx.schema.inner"])
def test_a_path_the_input_schema_allows_is_valid(path: str) -> None:
    result = compiled(path)
    assert (result.errors, result.warnings) == ([], [])


@pytest.mark.parametrize("path", ["answer_schema", "input", "input.", "input.a-b", "nodes.x.schema", "input..a"])
def test_anything_but_input_and_a_dotted_path_of_names_is_refused(path: str) -> None:
    result = compiled(path, input_schema=None)
    (problem,) = result.errors
    assert (problem.code, problem.category, problem.node_id) == ("answer_schema_path", "config", "a")
    assert problem.message == f"answer_schema '{path}' is not a path into the run input"
    assert problem.hint is not None
    assert "input.answer_schema" in problem.hint


def test_a_field_the_input_schema_does_not_declare_is_refused_as_a_templates_would_be() -> None:
    (problem,) = compiled("input.answer_shema").errors
    assert problem.code == "answer_schema_path"
    assert (
        problem.message
        == "answer_schema: 'input.answer_shema': 'answer_shema' is not a field of the run input (input_schema)"
    )
    assert problem.hint == "did you mean 'answer_schema'?"
    (nested,) = compiled("input.ctx.nope").errors
    assert "'ctx.nope' is not a field of the run input" in nested.message


def test_a_field_declared_as_another_type_than_object_is_refused() -> None:
    (problem,) = compiled("input.text").errors
    assert problem.code == "answer_schema_path"
    assert problem.message == "answer_schema 'input.text': input_schema declares it as string, not an object"


def test_without_an_input_schema_or_with_an_open_one_only_the_form_is_checked() -> None:
    assert compiled("input.anything", input_schema=None).errors == []
    open_input = {"type": "object", "additionalProperties": True, "properties": {"text": {"type": "string"}}}
    assert compiled("input.anything", input_schema=open_input).errors == []


def test_the_plan_records_that_the_node_reads_the_run_input() -> None:
    result = compiled("input.answer_schema")
    plan = result.plan
    assert plan is not None
    assert "input" in plan.nodes["a"].reads
