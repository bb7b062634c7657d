"""Template parsing: three spellings, one normalised Jinja form, every reference listed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plait.compile.template_types import FILTERS, TemplateError, environment
from plait.compile.templates import parse_template, split_path


def paths(text: str) -> list[tuple[object, ...]]:
    return [ref.path for ref in parse_template(text).refs]


def test_plain_text_has_no_refs_and_is_unchanged() -> None:
    template = parse_template("Summarise the transcript, please.")
    assert template.source == "Summarise the transcript, please."
    assert template.refs == ()


def test_jinja_paths_with_attributes_indexes_and_filters() -> None:
    assert paths("{{ input.transcript }} {{ split.chapters[0].title }} {{ a.b | tojson }}") == [
        ("input", "transcript"),
        ("split", "chapters", 0, "title"),
        ("a", "b"),
    ]


def test_percent_spelling_becomes_jinja_and_double_percent_is_literal() -> None:
    template = parse_template("Language: %input.language%, 50%% off, %split.chapters[1]%")
    assert template.source == "Language: {{ input.language }}, 50% off, {{ split.chapters[1] }}"
    assert [(r.path, r.spelling) for r in template.refs] == [
        (("input", "language"), "percent"),
        (("split", "chapters", 1), "percent"),
    ]


def test_percent_signs_that_are_not_paths_stay_text() -> None:
    template = parse_template("grew 20% to 30% this year")
    assert template.source == "grew 20% to 30% this year"
    assert template.refs == ()


def test_mixed_spellings_in_one_template() -> None:
    assert paths("%input.a% and {{ b.c }}") == [("input", "a"), ("b", "c")]


def test_loop_variables_are_not_references() -> None:
    text = "{% for p in extract.points %}- {{ p.point }} ({{ p.importance }})\n{% endfor %}"
    assert paths(text) == [("extract", "points")]


def test_dynamic_index_keeps_the_static_prefix_and_reads_the_index_expression() -> None:
    assert sorted(paths("{{ table[input.key].value }}")) == [("input", "key"), ("table",)]


def test_unicode_field_names_in_percent_spelling() -> None:
    assert paths("%node.字段%") == [("node", "字段")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{ unclosed", "syntax"),
        ("{% for x in y %}no end", "syntax"),
        ("{{ a | no_such_filter }}", "unknown filter"),
        ("{% if a %}{{ b | nope(1) }}{% endif %}", "unknown filter"),
    ],
)
def test_syntax_errors_and_unknown_filters(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        parse_template(text)


def test_error_carries_the_line_inside_the_template() -> None:
    with pytest.raises(TemplateError) as info:
        parse_template("line one\nline two\n{{ broken")
    assert info.value.line == 3


def test_split_path() -> None:
    assert split_path("a.b[2].c") == ("a", "b", 2, "c")
    assert split_path("node.0.x") == ("node", 0, "x")
    assert split_path("solo") == ("solo",)


# Jinja normalises "\r" line ends in template text to "\n"; prompts are written with "\n".
_text = st.text(alphabet=st.characters(blacklist_characters="{}%\r", blacklist_categories=("Cs",)), max_size=40)
_ident = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_text, _ident, _ident, st.booleans()), min_size=1, max_size=5), _text)
def test_normalised_source_renders_like_the_original_spelling(
    parts: list[tuple[str, str, str, bool]], tail: str
) -> None:
    """Whatever the spelling, rendering the normalised source inserts exactly the referenced values."""
    text = "".join(
        f"{lit}{'%' + a + '.' + b + '%' if pct else '{{ ' + a + '.' + b + ' }}'}" for lit, a, b, pct in parts
    )
    text += tail
    template = parse_template(text)
    assert [r.path for r in template.refs] == [(a, b) for _, a, b, _ in parts]
    context: dict[str, dict[str, str]] = {}
    for _, a, b, _ in parts:
        context.setdefault(a, {})[b] = f"<{a}.{b}>"
    rendered = environment().from_string(template.source).render(**context)
    assert rendered == "".join(f"{lit}<{a}.{b}>" for lit, a, b, _ in parts) + tail


def test_filter_names_known_without_jinja_match_the_environment() -> None:
    assert set(environment().filters) == FILTERS
