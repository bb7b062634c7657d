"""`x-eval`: read strictly, every wrong setting refused with where it is and how to fix it; and a
graph whose schemas carry it compiles."""

from __future__ import annotations

from typing import Any

import pytest

from plait.compile import compile_data
from plait.errors import PlaitError, Refusal
from plait.evaluation import JUDGE_SAMPLES, EvalSettingsError, FieldSettings, Rule, score
from plait.evaluation.rules import parse_settings


def refused(schema: Any) -> EvalSettingsError:
    with pytest.raises(EvalSettingsError) as caught:
        score(schema, None, None)
    return caught.value


def field(settings: dict[str, Any], kind: str = "string", **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"f": {"type": kind, "x-eval": settings, **extra}}}


def test_the_defaults() -> None:
    assert FieldSettings() == FieldSettings(None, 1e-9, 1e-6, None, 1.0, 3, False)
    assert JUDGE_SAMPLES == 3
    settings, problems = parse_settings({"type": "integer"}, "field `x`")
    assert (settings, problems) == (FieldSettings(), [])


def test_every_setting_is_read() -> None:
    settings, problems = parse_settings(
        {"type": "string", "x-eval": {"rule": "judge", "samples": 5, "weight": 2, "critical": True}}, "field `x`"
    )
    assert problems == []
    assert settings == FieldSettings(rule=Rule.JUDGE, samples=5, weight=2.0, critical=True)


@pytest.mark.parametrize(
    ("schema", "message", "hint"),
    [
        (
            field({"rule": "fuzzy"}),
            "x-eval of field `f` (#/properties/f): rule is 'fuzzy', not a rule",
            "use one of exact,",
        ),
        (field({"tolerence": 1}, "number"), "unknown setting 'tolerence'", "did you mean 'tolerance'?"),
        (field({"colour": 1}), "unknown setting 'colour'", "use only rule, tolerance"),
        (field({"tolerance": -1}, "number"), "tolerance must be a non-negative number, not -1", "write e.g. 0.5"),
        (field({"tolerance": "1"}, "number"), "tolerance must be a non-negative number, not '1'", "write e.g. 0.5"),
        (field({"threshold": 1.5}), "threshold must be a number from 0 to 1, not 1.5", "write e.g. 0.8"),
        (field({"weight": True}), "weight must be a non-negative number, not True", "write e.g. 0.5"),
        (field({"samples": 0, "rule": "judge"}), "samples must be a whole number from 1 to 99", "odd number"),
        (field({"critical": "yes"}), "critical must be true or false, not 'yes'", "critical: true"),
        (field("exact"), "x-eval of field `f` (#/properties/f) is 'exact'", "write an object"),  # type: ignore[arg-type]
        (field({"rule": "tolerance"}), "rule 'tolerance' cannot apply to a field of type string", "use one of"),
        (field({"rule": "meaning"}, "integer"), "rule 'meaning' cannot apply to a field of type integer", "use one of"),
        (field({"rule": "set"}, "object"), "rule 'set' cannot apply to a field of type object", "use one of"),
        (field({"tolerance": 0.1}), "tolerance applies only to numbers scored by rule 'tolerance'", "remove tolerance"),
        (
            field({"rule": "exact", "tolerance": 0.1}, "number"),
            "tolerance applies only to numbers scored by rule 'tolerance' (this field: number, rule exact)",
            "remove tolerance",
        ),
        (field({"threshold": 0.5}, "integer"), "threshold applies only to rules", "remove threshold"),
        (field({"threshold": 0.5}, "string", format="email"), "threshold applies only to rules", "remove threshold"),
        (field({"samples": 3}), "samples is read only by rule 'judge'", "add rule: judge"),
        (field({"rule": "words"}, "string", enum=["a"]), "rule 'words' cannot apply", "use one of"),
        ({"oneOf": [{"type": "string"}], "x-eval": {"rule": "words"}}, "x-eval of field `$` (#)", "use one of"),
    ],
)
def test_wrong_settings_are_refused_saying_where_what_and_how(schema: Any, message: str, hint: str) -> None:
    error = refused(schema)
    assert message in error.message
    assert hint in str(error.hint)
    assert (error.code, error.kind) == ("eval_settings_invalid", Refusal.INVALID)
    assert isinstance(error, PlaitError)


def test_every_problem_is_listed_at_once_even_in_branches_no_value_reaches() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "number", "x-eval": {"tolerance": -1}},
            "b": {
                "type": "array",
                "items": {"type": "object", "properties": {"c": {"type": "string", "x-eval": {"rule": "tolerance"}}}},
            },
        },
        "definitions": {"unused": {"type": "string", "x-eval": {"weight": -2}}},
    }
    error = refused(schema)
    assert error.message.endswith("(and 2 more)")
    assert len(error.details) == 3
    assert any("field `b[].c` (#/properties/b/items/properties/c)" in d for d in error.details)
    assert any("the schema at #/definitions/unused" in d for d in error.details)
    assert all(": " in d for d in error.details)  # each with its fix
    assert "docs/evaluation.md" in str(error.hint)


def test_a_property_named_x_eval_is_data_not_a_setting() -> None:
    schema = {"type": "object", "properties": {"x-eval": {"type": "integer"}}}
    assert score(schema, {"x-eval": 1}, {"x-eval": 1}).passed


def test_settings_on_a_reference_are_checked_against_its_target() -> None:
    schema = {
        "type": "object",
        "definitions": {"name": {"type": "string"}},
        "properties": {"n": {"$ref": "#/definitions/name", "x-eval": {"tolerance": 1}}},
    }
    assert "tolerance applies only to numbers" in refused(schema).message


@pytest.mark.parametrize("rule", ["exact", "judge", "ignore"])
def test_rules_that_apply_to_any_field(rule: str) -> None:
    for schema in ({"type": "object"}, {"anyOf": [{"type": "string"}]}, {}, {"type": "boolean"}):
        assert parse_settings({**schema, "x-eval": {"rule": rule}}, "x")[1] == []


def test_a_graph_whose_schemas_carry_x_eval_compiles() -> None:
    """JSON Schema ignores a keyword it does not know; the compiler checks schemas against their
    metaschema, which allows it, so `x-eval` sits in an edge's or a graph output's schema as written."""
    output = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["title", "total"],
        "properties": {
            "title": {"type": "string", "x-eval": {"rule": "judge", "samples": 3}},
            "total": {"$ref": "money", "x-eval": {"critical": True}},
            "tags": {"type": "array", "items": {"type": "string"}, "x-eval": {"rule": "sequence", "threshold": 0.5}},
        },
    }
    between = {"type": "object", "properties": {"text": {"type": "string", "x-eval": {"rule": "words"}}}}
    data = {
        "id": "g",
        "schemas": [
            {"id": "output", "schema": output},
            {"id": "between", "schema": between},
            {"id": "money", "schema": {"type": "number", "x-eval": {"tolerance": 0.01}}},
        ],
        "nodes": [
            {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "hello"},
            {"id": "b", "type": "LLM_CALL", "user_prompt_tpl": "{{ a.text }}"},
        ],
        "edges": [
            {"source": "a", "target": "b", "schema_id": "between"},
            {"source": "b", "target": "END", "schema_id": "output"},
        ],
    }
    result = compile_data(data)
    assert result.errors == []
    assert result.expanded is not None
    entry = result.expanded.schema_entry("output")
    assert entry is not None
    assert entry.schema_ == output  # kept as written, x-eval included
