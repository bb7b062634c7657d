"""Scoring one value against its expected value: each rule the schema implies, its default, and
what `x-eval` changes; objects, `$ref` and the fields a result lists."""

from __future__ import annotations

from typing import Any

import pytest

from plait.compile.schema_validator import registry_key, schema_registry
from plait.evaluation import (
    ABSOLUTE_TOLERANCE,
    MEANING_THRESHOLD,
    RELATIVE_TOLERANCE,
    WORDS_THRESHOLD,
    CaseScore,
    EvaluationError,
    FieldResult,
    json_equal,
    normalised,
    score,
    word_f1,
)
from plait.model.graph import SchemaEntry


def only(schema: dict[str, Any], expected: Any, actual: Any, **kwargs: Any) -> FieldResult:
    """The one result of scoring a non-object value."""
    result = score(schema, expected, actual, **kwargs)
    assert len(result.fields) == 1
    assert result.fields[0].path == "$"
    assert (result.passed, result.score) == (result.fields[0].passed, result.fields[0].score)
    return result.fields[0]


def fields(result: CaseScore) -> dict[str, FieldResult]:
    return {f.path: f for f in result.fields}


# --- exact ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected", "actual", "passed"),
    [
        ({"type": "integer"}, 3, 3, True),
        ({"type": "integer"}, 3, 3.0, True),  # JSON equality: 3 == 3.0
        ({"type": "integer"}, 3, 4, False),
        ({"type": "boolean"}, True, True, True),
        ({"type": "boolean"}, True, 1, False),  # true is not 1
        ({"type": "boolean"}, False, 0, False),
        ({"enum": ["red", "green"]}, "red", "red", True),
        ({"enum": ["red", "green"]}, "red", "Red", False),  # an enum is exact, not normalised
        ({"const": 1}, 1, True, False),
        ({"type": "null"}, None, None, True),
        ({"type": "null"}, None, 0, False),
    ],
)
def test_enum_const_boolean_integer_and_null_are_exact(
    schema: dict[str, Any], expected: Any, actual: Any, passed: bool
) -> None:
    result = only(schema, expected, actual)
    assert result.rule == "exact"
    assert (result.passed, result.score) == (passed, 1.0 if passed else 0.0)


def test_a_failure_says_what_was_expected_and_what_came() -> None:
    assert only({"type": "integer"}, 3, 4).detail == "expected 3, got 4"
    assert only({"enum": ["a", "b"]}, "a", "b").detail == 'expected "a", got "b"'


def test_json_equality() -> None:
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not json_equal({"a": [1, True]}, {"a": [1, 1]})
    assert not json_equal("1", 1)
    assert not json_equal([1, 2], [2, 1])
    assert not json_equal({"a": 1}, {"a": 1, "b": None})


# --- numbers -------------------------------------------------------------------------------------


def test_numbers_pass_within_the_default_tolerance() -> None:
    assert (ABSOLUTE_TOLERANCE, RELATIVE_TOLERANCE) == (1e-9, 1e-6)
    number = {"type": "number"}
    assert only(number, 0.3, 0.1 + 0.2).passed  # float noise
    assert only(number, 0.0, 5e-10).passed  # absolute 1e-9 near zero
    assert not only(number, 0.0, 2e-9).passed
    assert only(number, 1_000_000.0, 1_000_000.9).passed  # relative 1e-6 of a million is 1
    assert not only(number, 1_000_000.0, 1_000_001.5).passed
    failed = only(number, 2.5, 2.6)
    assert (failed.rule, failed.passed) == ("tolerance", False)
    assert failed.detail.startswith("expected 2.5, got 2.6 (off by 0.1")


def test_a_number_that_is_not_a_number_fails() -> None:
    assert not only({"type": "number"}, 1.0, "1.0").passed
    assert not only({"type": "number"}, 1.0, True).passed


def test_the_tolerance_is_settable() -> None:
    loose = {"type": "number", "x-eval": {"tolerance": 0.5}}
    assert only(loose, 10.0, 10.4).passed
    assert not only(loose, 10.0, 10.6).passed
    relative = {"type": "number", "x-eval": {"relative_tolerance": 0.1}}
    assert only(relative, 100.0, 109.0).passed
    assert not only(relative, 100.0, 112.0).passed


def test_a_tolerance_on_an_integer_scores_it_by_tolerance() -> None:
    result = only({"type": "integer", "x-eval": {"tolerance": 2}}, 10, 12)
    assert (result.rule, result.passed) == ("tolerance", True)


# --- strings -------------------------------------------------------------------------------------


def test_normalisation() -> None:
    assert normalised("  ＡＢＣ-１２\t\n x ") == "abc-12 x"
    assert normalised("Straße") == normalised("STRASSE")


@pytest.mark.parametrize("keyword", [{"format": "email"}, {"pattern": "^[A-Z]{2}-[0-9]+$"}])
def test_a_string_with_a_format_or_pattern_is_compared_normalised(keyword: dict[str, str]) -> None:
    schema = {"type": "string", **keyword}
    same = only(schema, "Ann@Example.org", "  ann@example.ORG ")
    assert (same.rule, same.passed, same.detail) == ("normalised", True, "equal once normalised")
    assert not only(schema, "ann@example.org", "anne@example.org").passed


def test_a_free_string_without_a_similarity_is_compared_by_words() -> None:
    assert WORDS_THRESHOLD == 0.8
    close = only({"type": "string"}, "the cat sat on the mat", "The cat sat on a mat")
    assert close.rule == "words"
    assert close.score == pytest.approx(word_f1("the cat sat on the mat", "The cat sat on a mat"))
    assert close.passed  # 5 of 6 words: F1 0.83
    assert "no similarity was given" in close.detail
    far = only({"type": "string"}, "the cat sat on the mat", "a dog ran")
    assert (far.passed, far.score) == (False, 0.0)


def test_word_f1() -> None:
    assert word_f1("", "") == 1.0
    assert word_f1("a b", "") == 0.0
    assert word_f1("a a b", "a b b") == pytest.approx(2 * 2 / 6)


def test_a_free_string_with_a_similarity_is_compared_by_meaning() -> None:
    calls: list[tuple[str, str]] = []

    def similarity(a: str, b: str) -> float:
        calls.append((a, b))
        return 0.85

    result = only({"type": "string"}, "the meeting starts at nine", "it begins at 9", similarity=similarity)
    assert MEANING_THRESHOLD == 0.8
    assert (result.rule, result.passed, result.score) == ("meaning", True, 0.85)
    assert calls == [("the meeting starts at nine", "it begins at 9")]
    below = only({"type": "string"}, "x y", "z", similarity=lambda a, b: 0.79)
    assert (below.passed, below.detail) == (False, "similarity 0.79 (at least 0.8 needed)")
    assert only({"type": "string"}, "x", "y", similarity=lambda a, b: -0.3).score == 0.0  # clipped to 0..1


def test_the_same_text_passes_without_asking_the_similarity() -> None:
    def never(a: str, b: str) -> float:
        raise AssertionError("not asked")

    assert only({"type": "string"}, "Same  text", "same text", similarity=never).passed


def test_thresholds_are_settable() -> None:
    strict = {"type": "string", "x-eval": {"threshold": 0.9}}
    assert not only(strict, "x", "y", similarity=lambda a, b: 0.85).passed
    assert not only(strict, "the cat sat on the mat", "The cat sat on a mat").passed  # F1 0.83 < 0.9
    loose = {"type": "string", "x-eval": {"rule": "words", "threshold": 0.3}}
    result = only(loose, "the cat sat", "the cat ran", similarity=lambda a, b: 0.0)
    assert (result.rule, result.passed) == ("words", True)  # rule words even with a similarity


def test_rules_can_be_named_per_field() -> None:
    assert not only({"type": "string", "x-eval": {"rule": "exact"}}, "Abc", "abc").passed
    assert only({"type": "string", "x-eval": {"rule": "normalised"}}, "Abc ", "abc").passed
    assert only({"type": "number", "x-eval": {"rule": "exact"}}, 1.0, 1).passed
    assert not only({"type": "number", "x-eval": {"rule": "exact"}}, 1.0, 1.0000001).passed


# --- the judge -----------------------------------------------------------------------------------


def test_a_judged_field_passes_by_majority_and_keeps_its_samples() -> None:
    asked: list[tuple[str, Any, Any, int]] = []

    def judge(path: str, expected: Any, actual: Any, samples: int) -> list[bool]:
        asked.append((path, expected, actual, samples))
        return [True, False, True, True, False][:samples]

    schema = {
        "type": "object",
        "properties": {
            "summary": {"type": "string", "x-eval": {"rule": "judge"}},
            "tone": {"type": "string", "x-eval": {"rule": "judge", "samples": 2}},
        },
    }
    result = fields(score(schema, {"summary": "a", "tone": "b"}, {"summary": "A!", "tone": "B!"}, judge=judge))
    assert asked == [("summary", "a", "A!", 3), ("tone", "b", "B!", 2)]
    summary, tone = result["summary"], result["tone"]
    assert (summary.rule, summary.passed, summary.samples) == ("judge", True, (True, False, True))
    assert summary.score == pytest.approx(2 / 3)
    assert (summary.judged, summary.split) == (1, 1)
    assert (tone.passed, tone.samples) == (False, (True, False))  # a tie fails
    assert tone.detail == "judge: 1 of 2 samples say it matches"


def test_a_judge_is_not_asked_about_equal_values() -> None:
    def never(*_: Any) -> list[bool]:
        raise AssertionError("not asked")

    assert only({"type": "string", "x-eval": {"rule": "judge"}}, "same", "same", judge=never).passed


def test_a_judged_field_without_a_judge_is_refused() -> None:
    with pytest.raises(EvaluationError) as refused:
        score({"type": "string", "x-eval": {"rule": "judge"}}, "a", "b")
    assert refused.value.code == "judge_missing"
    assert "field `$`" in refused.value.message
    assert "judge=" in str(refused.value.hint)


def test_a_judge_that_answers_no_booleans_is_refused() -> None:
    with pytest.raises(EvaluationError) as refused:
        score({"type": "string", "x-eval": {"rule": "judge"}}, "a", "b", judge=lambda *_: ["yes"])
    assert refused.value.code == "bad_judge"


# --- objects -------------------------------------------------------------------------------------

OBJECT = {
    "type": "object",
    "required": ["title", "year"],
    "properties": {
        "title": {"type": "string", "x-eval": {"rule": "normalised"}},
        "year": {"type": "integer"},
        "note": {"type": "string", "x-eval": {"rule": "exact"}},
        "rank": {"type": "integer", "x-eval": {"weight": 2}},
    },
}


def test_an_object_scores_the_weighted_mean_and_passes_when_its_required_fields_pass() -> None:
    expected = {"title": "Dune", "year": 1965, "note": "classic", "rank": 1}
    result = score(OBJECT, expected, {"title": "dune", "year": 1965, "note": "a classic", "rank": 2})
    assert result.passed  # note and rank are optional
    assert result.score == pytest.approx((1 + 1 + 0 + 2 * 0) / 5)
    assert [(f.path, f.passed, f.required, f.weight) for f in result.fields] == [
        ("title", True, True, 1.0),
        ("year", True, True, 1.0),
        ("note", False, False, 1.0),
        ("rank", False, False, 2.0),
    ]
    wrong_year = score(OBJECT, expected, {**expected, "year": 1966})
    assert not wrong_year.passed
    assert wrong_year.score == pytest.approx(4 / 5)


def test_a_required_field_missing_from_the_actual_value_fails_it() -> None:
    result = score(OBJECT, {"title": "Dune", "year": 1965}, {"title": "Dune"})
    assert not result.passed
    year = fields(result)["year"]
    assert (year.passed, year.score, year.detail) == (False, 0.0, "missing (expected 1965)")


def test_extra_properties_of_the_actual_value_are_ignored() -> None:
    result = score(OBJECT, {"title": "Dune", "year": 1965}, {"title": "Dune", "year": 1965, "extra": [1, 2]})
    assert (result.passed, result.score) == (True, 1.0)
    assert [f.path for f in result.fields] == ["title", "year"]


def test_a_declared_field_the_expected_value_lacks_counts_against_the_actual_one() -> None:
    result = score(OBJECT, {"title": "Dune", "year": 1965}, {"title": "Dune", "year": 1965, "note": "x"})
    assert result.passed  # optional
    note = fields(result)["note"]
    assert (note.passed, note.detail) == (False, 'expected no value, got "x"')


def test_fields_of_the_expected_value_the_schema_does_not_declare_are_compared_exactly() -> None:
    schema = {"type": "object", "properties": {}, "patternProperties": {"^n_": {"type": "number"}}}
    result = fields(score(schema, {"n_a": 1.0, "other": "x"}, {"n_a": 1.0 + 1e-12, "other": "X"}))
    assert (result["n_a"].rule, result["n_a"].passed) == ("tolerance", True)
    assert (result["other"].rule, result["other"].passed) == ("exact (no type)", False)


def test_an_ignored_field_is_neither_scored_nor_listed() -> None:
    schema = {
        "type": "object",
        "required": ["id", "at"],
        "properties": {"id": {"type": "string"}, "at": {"type": "string", "x-eval": {"rule": "ignore"}}},
    }
    result = score(schema, {"id": "a", "at": "monday"}, {"id": "a", "at": "tuesday"})
    assert (result.passed, result.score, [f.path for f in result.fields]) == (True, 1.0, ["id"])


def test_nested_objects_report_each_level() -> None:
    schema = {
        "type": "object",
        "required": ["author"],
        "properties": {
            "author": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string", "x-eval": {"rule": "exact"}}, "age": {"type": "integer"}},
            }
        },
    }
    result = score(schema, {"author": {"name": "Ann", "age": 40}}, {"author": {"name": "Ann", "age": 41}})
    assert result.passed
    assert [(f.path, f.passed) for f in result.fields] == [
        ("author", True),
        ("author.name", True),
        ("author.age", False),
    ]
    assert fields(result)["author"].detail == "1 of 2 fields passed; failing: age"


def test_an_actual_value_of_another_type_fails_with_the_reason() -> None:
    result = score(OBJECT, {"title": "Dune", "year": 1965}, "Dune (1965)")
    assert (result.passed, result.score) == (False, 0.0)
    assert result.fields[0].detail == 'expected an object, got "Dune (1965)"'


# --- $ref, combinators, anything else ------------------------------------------------------------


def test_local_references_are_followed_and_settings_beside_them_win() -> None:
    schema = {
        "type": "object",
        "definitions": {"money": {"type": "number", "x-eval": {"tolerance": 0.01, "weight": 3}}},
        "properties": {
            "net": {"$ref": "#/definitions/money"},
            "total": {"$ref": "#/definitions/money", "x-eval": {"critical": True, "weight": 1}},
        },
    }
    result = fields(score(schema, {"net": 10.0, "total": 12.0}, {"net": 10.005, "total": 12.02}))
    assert (result["net"].rule, result["net"].passed, result["net"].weight) == ("tolerance", True, 3.0)
    total = result["total"]
    assert (total.passed, total.critical, total.weight) == (False, True, 1.0)


def test_registry_references_resolve_in_the_registry_given() -> None:
    registry = schema_registry(
        registry_key(
            [SchemaEntry.model_validate({"id": "money", "schema": {"type": "number", "x-eval": {"tolerance": 1}}})]
        )
    )
    schema = {"type": "object", "properties": {"total": {"$ref": "money"}}}
    assert score(schema, {"total": 10}, {"total": 10.5}, registry=registry).passed
    with pytest.raises(EvaluationError) as refused:
        score(schema, {"total": 10}, {"total": 10.5})  # no registry: nothing to resolve it in, nothing fetched
    assert refused.value.code == "unresolved_schema_ref"
    assert "field `total`" in refused.value.message
    assert "registry=" in str(refused.value.hint)


def test_a_reference_loop_is_refused() -> None:
    schema = {
        "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
        "$ref": "#/definitions/a",
    }
    with pytest.raises(EvaluationError) as refused:
        score(schema, 1, 1)
    assert refused.value.code == "circular_schema_ref"


def test_a_recursive_schema_is_scored_as_deep_as_the_value() -> None:
    schema = {
        "$ref": "#/definitions/node",
        "definitions": {
            "node": {
                "type": "object",
                "required": ["name", "children"],
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/definitions/node"}},
                },
            }
        },
    }
    tree = {"name": "root", "children": [{"name": "leaf", "children": []}]}
    assert score(schema, tree, tree).passed
    wrong = score(schema, tree, {"name": "root", "children": [{"name": "other branch entirely", "children": []}]})
    assert not wrong.passed
    assert fields(wrong)["children[].name"].detail.startswith("passed in 0 of 1 aligned items")


@pytest.mark.parametrize("keyword", ["oneOf", "anyOf", "allOf"])
def test_combinators_are_compared_exactly(keyword: str) -> None:
    schema = {keyword: [{"type": "string"}, {"type": "number"}]}
    assert only(schema, "Abc", "Abc").rule == "exact (combinator)"
    assert not only(schema, "Abc", "abc").passed
    assert not only({"not": {"type": "null"}}, 1.0, 1.0000001).passed
    assert only({"if": {"type": "string"}, "then": {"minLength": 1}}, "a", "a").rule == "exact (combinator)"


def test_schemas_that_say_nothing_are_compared_exactly() -> None:
    assert only({}, {"a": 1}, {"a": 1.0}).rule == "exact (no type)"
    assert not only(True, [1], [1, 1]).passed  # type: ignore[arg-type]
    assert only({"type": "array", "items": [{"type": "string"}]}, ["a"], ["a"]).rule == "exact (tuple)"


def test_a_list_of_types_uses_the_rule_of_the_expected_value() -> None:
    nullable = {"type": ["string", "null"], "format": "date"}
    assert only(nullable, "2024-01-02", "2024-01-02 ").rule == "normalised"
    missing = only(nullable, None, "2024-01-02")
    assert (missing.rule, missing.passed) == ("exact", False)
    assert not only(nullable, "2024-01-02", None).passed


def test_the_whole_value_ignored_passes() -> None:
    assert score({"type": "string", "x-eval": {"rule": "ignore"}}, "a", "b") == CaseScore(True, 1.0, [])


def test_scores_are_deterministic() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}, "z": {"type": "integer"}},
    }
    expected = {"tags": ["a", "b", "c"], "z": 1, "y": 2, "x": 3}
    actual = {"tags": ["c", "b", "a", "a"], "z": 1, "x": 4, "y": 2}
    first = score(schema, expected, actual)
    assert all(score(schema, expected, actual) == first for _ in range(5))
    assert [f.path for f in first.fields] == ["tags", "z", "x", "y"]  # declared order, then the others sorted
