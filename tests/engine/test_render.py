"""Rendering prompts (plait/engine/render.py): data keys win over Python attributes, `tojson` is plain JSON."""

from __future__ import annotations

import json

import pytest

from plait.compile.templates import parse_template
from plait.engine.render import render


def rendered(text: str, names: dict[str, object]) -> str:
    """A template as the compiler parses it, rendered as the engine does."""
    return render(parse_template(text), names)


DICT_METHODS = sorted(name for name in dir(dict) if not name.startswith("_"))


@pytest.mark.parametrize("field", DICT_METHODS)
def test_an_output_field_named_after_a_dict_method_is_the_data_in_every_spelling(field: str) -> None:
    names = {"make": {field: ["a", "b"]}, "input": {}, "nodes": {}}
    assert rendered(f"{{{{ make.{field} }}}}", names) == '["a", "b"]'
    assert rendered(f"%make.{field}%", names) == '["a", "b"]'
    assert rendered(f"{{{{ make.{field} | tojson }}}}", names) == '["a", "b"]'
    assert rendered(f"{{{{ make['{field}'][1] }}}}", names) == "b"


def test_a_dict_method_is_still_callable_when_no_field_has_its_name() -> None:
    names = {"make": {"a": 1, "b": 2}, "input": {}, "nodes": {}}
    assert rendered("{% for k, v in make.items() %}{{ k }}={{ v }};{% endfor %}", names) == "a=1;b=2;"


def test_tojson_is_plain_json_not_html() -> None:
    things = ["a < b", "R&D", "it's", 'say "hi"', "naïve ✓"]
    out = rendered("{{ make.things | tojson }}", {"make": {"things": things}, "input": {}, "nodes": {}})
    assert out == json.dumps(things, ensure_ascii=False)
    assert "\\u003c" not in out
    assert "\\u0026" not in out
    assert "\\u0027" not in out
    assert rendered("{{ make.x | tojson(indent=2) }}", {"make": {"x": {"k": 1}}, "input": {}, "nodes": {}}) == (
        '{\n  "k": 1\n}'
    )
