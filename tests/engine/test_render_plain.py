"""Prompts that only print paths (`Feedback: {{ input.feedback }}`) are rendered without Jinja:
the text must be exactly what Jinja renders, budgets and limits included, for any names."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plait.compile.templates import parse_template
from plait.engine import render as render_module
from plait.engine.render import PromptBudget, render
from plait.engine.render_limits import RenderLimitError, RenderLimits

_KEYS = st.sampled_from(["n", "text", "items", "keys", "output", "a_b", "x"])
_SCALARS = st.none() | st.booleans() | st.integers(-5, 10**12) | st.floats(allow_nan=False) | st.text(max_size=8)
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3), max_leaves=8
)
_ROOTS = st.sampled_from(["input", "current", "classify", "range", "missing", "params"])
_PATHS = st.tuples(_ROOTS, st.lists(_KEYS, max_size=3)).map(lambda p: ".".join([p[0], *p[1]]))
_TEXTS = st.sampled_from(["", "n=", "Feedback: ", " and ", "\n", "é ✓ ", "{", "} ", "a\r\nb", "{# c #}"])
_TEMPLATES = st.lists(st.tuples(_TEXTS, _PATHS), min_size=1, max_size=4).map(
    lambda parts: "".join(f"{text}{{{{ {path} }}}}" for text, path in parts)
)
_NAMES = st.fixed_dictionaries(
    {"input": _VALUES, "current": _VALUES, "classify": _VALUES, "nodes": st.just({}), "params": st.just({})}
)


def _both(source: str, names: dict[str, Any], **options: Any) -> tuple[Any, Any]:
    """What `render` gives (a text, or the error it raised), then what Jinja alone gives."""
    outcomes = []
    for plain in (render_module._plain, lambda _source: None):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(render_module, "_plain", plain)
            budget = PromptBudget(**options["budget"]) if "budget" in options else None
            try:
                outcomes.append((render(parse_template(source), names, budget, **options.get("limits", {})), budget))
            except Exception as exc:  # a syntax error, a limit, a value JSON cannot write: the same one
                outcomes.append((type(exc), str(exc)))
    return outcomes[0], outcomes[1]


@settings(max_examples=300, deadline=None)
@given(_TEMPLATES, _NAMES)
def test_a_plain_template_renders_as_jinja_renders_it(source: str, names: dict[str, Any]) -> None:
    fast, jinja = _both(source, names)
    assert fast == jinja


@settings(max_examples=150, deadline=None)
@given(_TEMPLATES, _NAMES, st.integers(0, 40), st.booleans())
def test_a_plain_template_spends_the_prompt_budget_as_jinja_does(
    source: str, names: dict[str, Any], remaining: int, sanitize: bool
) -> None:
    fast, jinja = _both(source, names, budget={"remaining": remaining, "sanitize": sanitize})
    assert fast == jinja


def test_a_plain_template_is_held_to_the_output_limit() -> None:
    names = {"input": {"text": "x" * 50}}
    fast, jinja = _both(
        "{{ input.text }}{{ input.text }}",
        names,
        limits={"limits": RenderLimits(output_chars=60, steps=1000, work_chars=1000)},
    )
    assert fast == jinja
    assert fast[0] is RenderLimitError


def test_only_plain_prints_skip_jinja() -> None:
    assert render_module._plain("Feedback: {{ input.feedback }}\n") == (
        ("Feedback: ", ("input", "feedback")),
        ("\n", None),
    )
    for source in (
        "{{ x | upper }}",
        "{% if x %}y{% endif %}",
        "{{- x }}",
        "{{ x[0] }}",
        "{{ a.output }}",
        "{ {{ x }}",
    ):
        assert render_module._plain(source) is None, source


def test_a_prompt_budget_copy_is_a_copy_of_every_field() -> None:
    """`arender` tries each render on `PromptBudget.copy()` (not `dataclasses.replace`, slower):
    a field added to the budget must be added to the copy."""
    import dataclasses

    from plait.llm.tokens import ESTIMATE

    budget = PromptBudget(remaining=5, sanitize=True, truncated=3, tokens=7, counter=ESTIMATE)
    copy = budget.copy()
    assert copy == dataclasses.replace(budget)
    assert copy is not budget
    assert [f.name for f in dataclasses.fields(PromptBudget)] == [
        "remaining",
        "sanitize",
        "truncated",
        "tokens",
        "counter",
        "log",
    ]
