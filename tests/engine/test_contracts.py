"""Reading a model's answer against the out-edge schemas (plait/engine/contracts.py)."""

from __future__ import annotations

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
    assert problems == ["bug: (root): 'title' is a required property"]


def test_text_that_is_not_json_is_a_problem_naming_where() -> None:
    value, problems = contract().parse('{"title": "unterminated')
    assert value is None
    assert problems == ["the answer is not JSON: Unterminated string starting at at line 1 column 11"]


def test_a_fenced_answer_is_read_inside_the_fence() -> None:
    value, problems = contract().parse('```json\n{"title": "x"}\n```')
    assert (value, problems) == ({"title": "x"}, [])
