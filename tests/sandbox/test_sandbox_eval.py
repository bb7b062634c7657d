"""Correct answers: expressions over a scope, functions called with arguments, JSON in and out."""

from __future__ import annotations

import re
from typing import Any

import pytest

from plait.sandbox import (
    JsMemoryError,
    JsRuntimeError,
    JsSandbox,
    JsSyntaxError,
    JsTimeoutError,
    SandboxError,
    code_function,
)

SCOPE: dict[str, Any] = {
    "input": {"t": "  Hello, world  ", "n": 3, "tags": ["a", "b"], "language": None},
    "nodes": {"classify": {"label": "bug", "score": 0.75}, "join": {"file_bug": {"title": "Crash"}}},
    "current": {"score": 0.25},
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("nodes.classify.label", "bug"),
        ("current.score > 0.5", False),
        ("({text: input.t.trim()})", {"text": "Hello, world"}),
        ("input.tags.map(t => t.toUpperCase())", ["A", "B"]),
        ("input.n * 2 + 0.5", 6.5),
        ("input.n / 3", 1),
        ("input.language || 'en'", "en"),
        ("input.missing", None),
        ("undefined", None),
        ("null", None),
        ("`bug filed: ${nodes.join.file_bug.title}`", "bug filed: Crash"),
        ("{a: 1}", {"a": 1}),  # an object literal, not a block: the expression is wrapped in parens
        ("[1, undefined, 'x']", [1, None, "x"]),
        ("({a: undefined, b: [{}]})", {"b": [{}]}),
        ("new Date(0).toISOString()", "1970-01-01T00:00:00.000Z"),
        ("Object.entries({x: 1})", [["x", 1]]),
        ("[...new Set([1, 1, 2])]", [1, 2]),
        ("JSON.parse(JSON.stringify(nodes))", SCOPE["nodes"]),
        ("'naïve ✓ 日本語 😀'.length", 14),
        ("input.t.replace(/\\s+/g, ' ').trim()", "Hello, world"),
        ("(() => { let total = 0; for (const c of input.tags) total += c.charCodeAt(0); return total })()", 195),
        ("typeof nodes.classify", "object"),
        ("-0", 0),
        ("2 ** 53", 2**53),
    ],
)
def test_expression(sandbox: JsSandbox, expression: str, expected: Any) -> None:
    assert sandbox.evaluate(expression, SCOPE) == expected


def test_json_round_trip(sandbox: JsSandbox) -> None:
    value = {
        "s": 'quote " backslash \\ newline \n tab \t nul \x00 line-sep \u2028 emoji 😀 é',
        "i": -(2**31),
        "big": 2**52,
        "f": 1.5e-7,
        "b": [True, False, None],
        "nested": {"a": [{"b": {"c": []}}], "": "empty key", "__proto__": {"polluted": True}},
    }
    assert sandbox.evaluate("input", {"input": value}) == value
    assert sandbox.call("x => x", value) == value
    assert sandbox.evaluate("({}).polluted", {"input": value}) is None  # "__proto__" stayed a plain key


def test_unicode_in_and_out(sandbox: JsSandbox) -> None:
    assert sandbox.evaluate("input.s + '→' + '日本'", {"input": {"s": "é"}}) == "é→日本"
    assert sandbox.evaluate("'😀'.codePointAt(0)", {}) == 0x1F600
    assert sandbox.evaluate("input.s.length", {"input": {"s": "\ud800"}}) == 1  # a lone surrogate survives


def test_scope_names_are_the_only_bindings(sandbox: JsSandbox) -> None:
    assert sandbox.evaluate("a + b", {"a": 1, "b": 2}) == 3
    assert sandbox.evaluate("typeof input", {}) == "undefined"
    with pytest.raises(SandboxError, match="identifier"):
        sandbox.evaluate("1", {"not-a-name": 1})
    with pytest.raises(SandboxError, match="identifier"):
        sandbox.evaluate("1", {"eval": 1})
    with pytest.raises(SandboxError, match="not JSON"):
        sandbox.evaluate("1", {"x": object()})
    with pytest.raises(SandboxError, match="not JSON"):
        sandbox.evaluate("1", {"x": float("nan")})


def test_call(sandbox: JsSandbox) -> None:
    old = {"items": [{"t": 0}], "title": "x"}
    assert sandbox.call("old => ({...old, chapters: old.items})", old) == {**old, "chapters": old["items"]}
    assert sandbox.call("(a, b) => a + b", 2, 3) == 5
    assert sandbox.call("function (x) { return x * 2 }", 21) == 42
    assert sandbox.call("() => undefined") is None
    body = "const words = input.text.split(' ');\nreturn {count: words.length};"
    assert sandbox.call(code_function(body), {"text": "a b c"}, {}, None) == {"count": 3}
    with pytest.raises(JsRuntimeError, match="not a function"):
        sandbox.call("({a: 1})", 1)
    with pytest.raises(JsRuntimeError, match="not a function"):
        sandbox.call("null")


def test_arguments_are_frozen_copies(sandbox: JsSandbox) -> None:
    old = {"items": [1]}
    with pytest.raises(JsRuntimeError, match=r"not extensible|read only"):
        sandbox.call("old => { old.items.push(2); return old }", old)
    assert old == {"items": [1]}
    assert sandbox.call("old => old.items.concat([2])", old) == [1, 2]


def test_strict_mode(sandbox: JsSandbox) -> None:
    assert sandbox.evaluate("(function () { return this })()", {}) is None  # strict: `this` is undefined
    with pytest.raises(JsRuntimeError, match="ReferenceError"):
        sandbox.evaluate("(() => { undeclared = 1; return 1 })()", {})
    with pytest.raises(JsSyntaxError, match="with"):
        sandbox.evaluate("(() => { with ({}) {} })()", {})


def test_errors_carry_positions(sandbox: JsSandbox) -> None:
    with pytest.raises(JsRuntimeError) as info:
        sandbox.evaluate("(() => {\n  const x = null;\n  return x.field;\n})()", {})
    assert (info.value.line, info.value.column) == (3, 10)
    assert "cannot read property 'field' of null" in info.value.message
    with pytest.raises(JsSyntaxError) as syntax:
        sandbox.evaluate("({a: 1,\n  b: })", {})
    assert (syntax.value.line, syntax.value.column) == (2, 6)


def test_thrown_values(sandbox: JsSandbox) -> None:
    cases = {
        "(() => { throw new TypeError('bad label') })()": "TypeError: bad label",
        "(() => { throw 'plain string' })()": "threw plain string",
        "(() => { throw {code: 7} })()": 'threw {"code":7}',
        "(() => { throw undefined })()": "threw undefined",
        "(() => { throw Symbol('s') })()": "threw Symbol(s)",
        "(() => { throw 10n })()": "threw 10",
        "(() => { throw {get message() { throw 1 }, toString() { throw 2 }} })()": "cannot be described",
    }
    for expression, message in cases.items():
        with pytest.raises(JsRuntimeError, match=re.escape(message)):
            sandbox.evaluate(expression, {})
    # QuickJS throws null when it cannot allocate an error, and nothing afterwards tells that
    # apart from `throw null`: null is reported as what it nearly always is, with the way out.
    with pytest.raises(JsMemoryError, match=r"threw null.*throw an Error"):
        sandbox.evaluate("(() => { throw null })()", {})
    assert sandbox.evaluate("1 + 1", {}) == 2


def test_subclassed_errors_and_own_overrides_work(sandbox: JsSandbox) -> None:
    """Frozen prototypes must not break ordinary assignments to one's own objects."""
    expression = """(() => {
      class LabelError extends Error { constructor(m) { super(m); this.name = 'LabelError'; } }
      const o = {}; o.toString = () => 'custom'; o.constructor = 'c';
      const e = new LabelError('x'); e.message = 'changed';
      return [String(o), e.name, e.message, o.constructor];
    })()"""
    assert sandbox.evaluate(expression, {}) == ["custom", "LabelError", "changed", "c"]


def test_timeout_override(sandbox: JsSandbox) -> None:
    """A call's own limit replaces the sandbox's default for that call only."""
    with pytest.raises(JsTimeoutError, match=r"exceeded 0\.1 s"):
        sandbox.evaluate("(() => { for (;;) {} })()", {}, timeout_s=0.1)
    spin = "(() => { const end = Date.now() + 50; while (Date.now() < end) {} return 'done' })()"
    assert sandbox.evaluate(spin, {}) == "done"


def test_close_is_idempotent_and_final() -> None:
    box = JsSandbox()
    assert box.evaluate("1", {}) == 1
    box.close()
    box.close()
    with pytest.raises(SandboxError, match="closed"):
        box.evaluate("1", {})
