"""Arrays: set and sequence F1, their thresholds, and the fields of their items reported at `[]` paths."""

from __future__ import annotations

from typing import Any

import pytest

from plait.evaluation import ARRAY_THRESHOLD, CaseScore, FieldResult, score
from plait.evaluation.alignment import fill_sequence, fill_set, sequence_pairs, set_pairs


def fields(result: CaseScore) -> dict[str, FieldResult]:
    return {f.path: f for f in result.fields}


STRINGS = {"type": "array", "items": {"type": "string", "x-eval": {"rule": "exact"}}}


def test_an_array_of_scalars_is_a_set_by_default() -> None:
    result = score(STRINGS, ["a", "b", "c"], ["c", "a", "b"])
    assert (result.passed, result.score, result.fields[0].rule) == (True, 1.0, "set")


def test_set_f1_counts_repeated_items_once_each() -> None:
    result = score(STRINGS, ["a", "a", "b"], ["a", "b", "b"])
    assert result.score == pytest.approx(2 * 2 / 6)
    assert result.fields[0].detail == 'F1 0.67 (2 of 3 expected items matched, 3 given); missing "a"; unexpected "b"'


def test_the_default_threshold_wants_every_item_and_is_settable() -> None:
    assert ARRAY_THRESHOLD == 1.0
    assert not score(STRINGS, ["a", "b", "c"], ["a", "b"]).passed
    loose = {**STRINGS, "x-eval": {"threshold": 0.8}}
    result = score(loose, ["a", "b", "c"], ["a", "b"])
    assert (result.passed, result.score) == (True, 0.8)
    assert not score(loose, ["a", "b", "c"], ["a"]).passed


def test_empty_arrays_match() -> None:
    assert score(STRINGS, [], []).score == 1.0
    assert score(STRINGS, [], ["a"]).score == 0.0


def test_items_match_under_their_own_rule() -> None:
    numbers = {"type": "array", "items": {"type": "number", "x-eval": {"tolerance": 0.1}}}
    assert score(numbers, [1.0, 2.0], [2.05, 0.95]).passed
    assert not score(numbers, [1.0, 2.0], [2.5, 1.0]).passed


def test_a_sequence_is_scored_by_its_longest_common_subsequence() -> None:
    sequence = {**STRINGS, "x-eval": {"rule": "sequence"}}
    result = score(sequence, ["a", "b", "c", "d"], ["a", "c", "b", "d"])
    assert result.fields[0].rule == "sequence"
    assert result.score == pytest.approx(2 * 3 / 8)  # a, b (or c), d
    assert score(sequence, ["a", "b"], ["a", "b"]).passed


def test_the_set_matching_is_maximal_not_first_come() -> None:
    """Expected 'ab' matches both actual items by words, 'b' only the second: a first-come
    matching would pair 'ab' with 'b' and leave 'b' alone."""
    schema = {
        "type": "array",
        "items": {"type": "string", "x-eval": {"rule": "words", "threshold": 0.6}},
        "x-eval": {"rule": "set"},
    }
    result = score(schema, ["x y", "y"], ["y", "x y"])
    assert result.passed


def test_a_value_of_another_type_fails_the_array() -> None:
    result = score(STRINGS, [], "a")
    assert (result.passed, result.fields[0].detail) == (False, 'expected an array, got "a"')


CHAPTERS = {
    "type": "object",
    "required": ["chapters"],
    "properties": {
        "chapters": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["start", "title"],
                "properties": {
                    "start": {"type": "integer", "x-eval": {"critical": True}},
                    "title": {"type": "string", "x-eval": {"rule": "normalised"}},
                    "note": {"type": "string", "x-eval": {"rule": "exact"}},
                },
            },
        }
    },
}


def chapters(*items: tuple[int, str]) -> dict[str, Any]:
    return {"chapters": [{"start": s, "title": t} for s, t in items]}


def test_an_array_of_objects_is_a_sequence_and_reports_each_item_field() -> None:
    expected = chapters((0, "Intro"), (60, "Setup"), (120, "Talk"), (300, "End"))
    actual = chapters((0, "intro"), (65, "Setup"), (120, "Talk"), (310, "End"))
    result = fields(score(CHAPTERS, expected, actual))
    assert result["chapters"].rule == "sequence"
    assert (result["chapters"].passed, result["chapters"].score) == (False, 0.5)
    start, title = result["chapters[].start"], result["chapters[].title"]
    assert (start.passed, start.items, start.critical) == (False, (2, 4), True)
    assert start.detail == "passed in 2 of 4 aligned items; e.g. expected 60, got 65"
    assert (title.passed, title.items, title.rule) == (True, (4, 4), "normalised")
    assert list(result) == ["chapters", "chapters[].start", "chapters[].title"]


def test_items_left_over_are_paired_for_the_field_report() -> None:
    """A chapter whose start moved is one wrong `start`, not a missing and an extra chapter, and
    an item with no counterpart is not counted for its fields."""
    expected = chapters((0, "Intro"), (60, "Setup"), (120, "Talk"))
    actual = chapters((0, "Intro"), (61, "Setup"))
    result = fields(score(CHAPTERS, expected, actual))
    assert result["chapters[].start"].items == (1, 2)
    assert result["chapters[].title"].items == (2, 2)


def test_set_items_left_over_are_paired_closest_first() -> None:
    schema = {"type": "array", "x-eval": {"rule": "set"}, "items": CHAPTERS["properties"]["chapters"]["items"]}  # type: ignore[index]
    expected = [{"start": 1, "title": "A"}, {"start": 2, "title": "B"}]
    actual = [{"start": 2, "title": "B"}, {"start": 9, "title": "A"}]
    result = fields(score(schema, expected, actual))
    assert result["[].start"].items == (1, 2)
    assert result["[].title"].items == (2, 2)  # A went with A, not with the other leftover


def test_nested_arrays_add_up_their_aligned_items() -> None:
    schema = {
        "type": "array",
        "items": {
            "type": "object",
            "required": ["speakers"],
            "properties": {
                "speakers": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string", "x-eval": {"rule": "exact"}}},
                    },
                }
            },
        },
    }
    expected = [{"speakers": [{"name": "Ann"}, {"name": "Bo"}]}, {"speakers": [{"name": "Cy"}]}]
    actual = [{"speakers": [{"name": "Ann"}, {"name": "Bob"}]}, {"speakers": [{"name": "Cy"}]}]
    result = fields(score(schema, expected, actual))
    assert result["[].speakers[].name"].items == (2, 3)
    assert result["[].speakers"].items == (1, 2)


def test_an_optional_item_field_failing_does_not_unmatch_the_item() -> None:
    expected = {"chapters": [{"start": 0, "title": "A", "note": "x"}]}
    actual = {"chapters": [{"start": 0, "title": "A", "note": "y"}]}
    result = fields(score(CHAPTERS, expected, actual))
    assert (result["chapters"].passed, result["chapters[].note"].passed) == (True, False)


def test_alignments() -> None:
    match = [[True, False, False], [False, False, True], [False, True, False]]
    assert sequence_pairs(match, 3) == [(0, 0), (2, 1)]  # one of two longest, always the same
    assert set_pairs(match, 3) == [(0, 0), (1, 2), (2, 1)]
    assert set_pairs([[True, True], [True, False]], 2) == [(0, 1), (1, 0)]  # augmenting path
    assert sequence_pairs([], 0) == set_pairs([], 0) == []
    assert fill_sequence([(1, 2)], 4, 4) == [(0, 0), (1, 2), (2, 3)]
    assert fill_set([(0, 0)], [[1.0, 0.0, 0.0], [0.0, 0.2, 0.9]], 3) == [(0, 0), (1, 2)]
