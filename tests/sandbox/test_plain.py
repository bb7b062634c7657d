"""Plain expressions (`plait.sandbox.plain`) are computed without a process: the value must be
exactly what an evaluator process answers (types, key order, the JSON round trip), and whenever
the process would answer otherwise, or raise, the plain path must hand the expression to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plait.model.limits import MAX_DEPTH
from plait.sandbox import JsSandbox, SandboxError
from plait.sandbox import _protocol as wire
from plait.sandbox import plain as plain_module
from plait.sandbox.plain import MAX_PAYLOAD, plain_expression
from plait.sandbox.sandbox import _scope

OUTPUT_BYTES = 100_000


@pytest.fixture(scope="module")
def box() -> Iterator[JsSandbox]:
    with JsSandbox(workers=1, max_output_bytes=OUTPUT_BYTES) as sandbox:
        yield sandbox


def computed(expression: str, scope: dict[str, Any], max_output_bytes: int = OUTPUT_BYTES) -> tuple[Any] | None:
    """`(value,)` as the plain path computes it; None: it hands the expression to a process."""
    compiled = plain_expression(expression)
    return None if compiled is None else compiled.value(scope, _scope(scope)[1], max_output_bytes)


def in_process(box: JsSandbox, expression: str, scope: dict[str, Any]) -> tuple[str, Any]:
    """What an evaluator process answers: ("value", its JSON text) or ("error", the error's type)."""
    names, payload = _scope(scope)
    try:
        value = box._request(wire.EVALUATE, expression, names, payload, None, None)
    except SandboxError as exc:
        return "error", type(exc).__name__
    return "value", json.dumps(value)


def agrees(box: JsSandbox, expression: str, scope: dict[str, Any]) -> bool:
    """The plain path's value is the process's (as JSON text: `1` is not `1.0` nor `true`, and key
    order counts); True too when it hands the expression over. Whether it computed it: `.plain`."""
    found = computed(expression, scope)
    agrees.plain = found is not None  # type: ignore[attr-defined]
    if found is None:
        return True
    assert in_process(box, expression, scope) == ("value", json.dumps(found[0])), (expression, scope)
    return True


_KEYS = ["n", "s", "l", "d", "f", "b", "z", "length", "0", "10", "constructor", "__proto__", "a b", "class", "é"]
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**54), 2**54)
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 2.0, 1e21, 1e-7, 0.1, 2.0**53, 2.0**53 + 2])
    | st.text(max_size=4)
    | st.sampled_from(["", "x", "é", "😀", "\ud83d\ude00", "a\nb", "\u2028"])
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4),
    max_leaves=10,
)
_SCOPES = st.fixed_dictionaries(
    {"input": _VALUES, "current": _VALUES, "nodes": st.dictionaries(st.sampled_from(["a", "b"]), _VALUES, max_size=2)}
)
_LEAVES = st.sampled_from(
    [
        "input", "current", "nodes", "nodes.a", "current.n", "current.l", "current.d", "current.s", "current.f",
        "current.b", "current[0]", "current['n']", "current.length", "input.n", "0", "1", "41", "9007199254740991",
        "9007199254740993", "true", "false", "null", "'x'", '"é"', "''", "'1'", "1.5", "undefined", "Math", "this",
        "x", "[]", "({})",
    ]
)  # fmt: skip
_OPS = st.sampled_from(["+", "-", "<", "<=", ">", ">=", "===", "!==", "==", "*"])
_OBJECT_KEYS = st.sampled_from(["n", "s", "class", "'a b'", '"x"', "'0'", "1", "__proto__", "'__proto__'", "length"])


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda a, op, b: f"{a} {op} {b}", inner, _OPS, inner),
        st.builds(lambda a, op, b: f"{a}{op}{b}", inner, st.sampled_from(["+", "-", "<", "==="]), inner),
        st.builds(lambda a: f"-{a}", inner),
        st.builds(lambda a: f"({a})", inner),
        st.builds(lambda items: "[" + ", ".join(items) + "]", st.lists(inner, max_size=3)),
        st.builds(
            lambda fields, trailing: (
                "({" + ", ".join(f"{k}: {v}" for k, v in fields) + ("," if trailing else "") + "})"
            ),
            st.lists(st.tuples(_OBJECT_KEYS, inner), max_size=3),
            st.booleans(),
        ),
        st.builds(lambda a, key: f"{a}.{key}", inner, st.sampled_from(["n", "l", "d", "length", "0", "constructor"])),
        st.builds(lambda a, index: f"{a}[{index}]", inner, st.sampled_from(["0", "1", "2", "'n'", "'length'"])),
    )


_EXPRESSIONS = st.recursive(_LEAVES, _compound, max_leaves=6)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_EXPRESSIONS, _SCOPES)
def test_a_plain_value_is_what_an_evaluator_process_answers(box: JsSandbox, expression: str, scope: Any) -> None:
    assert agrees(box, expression, scope)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SCOPES)
def test_reshaping_and_arithmetic_on_generated_values(box: JsSandbox, scope: Any) -> None:
    """The shapes TRANSFORM and CONDITION expressions take, on any values."""
    for expression in (
        "({n: current.n + 1})",
        "({n: current.n - input.n, s: current.s, l: current.l, d: current.d})",
        "[current.f, -current.f, current.f + current.n, current.l[0], current.d.n]",
        "current.n >= 3",
        "current.s === 'x'",
        "current.s + ':' + current.n",
        "current.b !== true",
        "current.l.length > 1",
        "input",
        "nodes",
    ):
        assert agrees(box, expression, scope)


@pytest.mark.parametrize(
    ("expression", "scope", "expected"),
    [
        ("({n: current.n + 1})", {"current": {"n": 41}}, {"n": 42}),
        ("current.n - -1", {"current": {"n": 1}}, 2),
        ("[current.l.length, current.l[2], current['s']]", {"current": {"l": [1, 2, 3], "s": "é"}}, [3, 3, "é"]),
        ("current.f + current.f", {"current": {"f": 1.5}}, 3),  # an integral number comes back an integer
        ("-current.n", {"current": {"n": 0}}, 0),  # -0 is written 0
        ("current.x", {"current": {"x": 2.0}}, 2),
        ("current.n >= 3", {"current": {"n": 2.5}}, False),
        ("current.v + ' on ' + current.n + 1 + null + true", {"current": {"v": "a", "n": -3}}, "a on -31nulltrue"),
        ("1 + 2 + current.v", {"current": {"v": "é"}}, "3é"),
        ("current.b === true", {"current": {"b": True}}, True),
        ("current.n === true", {"current": {"n": 1}}, False),  # 1 == True in Python, not in JavaScript
        ("({a: {b: [current]}, 'c d': null,})", {"current": [1]}, {"a": {"b": [[1]]}, "c d": None}),
        ("input", {"input": {"b": 1, "a": [{"z": None}]}}, {"b": 1, "a": [{"z": None}]}),
    ],
)
def test_plain_expressions(box: JsSandbox, expression: str, scope: dict[str, Any], expected: Any) -> None:
    found = computed(expression, scope)
    assert found is not None
    assert json.dumps(found[0]) == json.dumps(expected)
    assert in_process(box, expression, scope) == ("value", json.dumps(expected))


@pytest.mark.parametrize(
    "expression",
    [
        "Math.max(1, 2)", "current.n * 2", "current.n / 2", "current.n % 2", "current.n ** 2", "current.n == 1",
        "!current.b", "current.b && 1", "current.n ? 1 : 2", "`x`", "/x/", "1.5", "1e3", "0x10",
        "01", "1n", "current?.n", "({...current})", "[...current.l]", "({current})", "({[current.s]: 1})",
        "({__proto__: 1})", "({'__proto__': 1})", "({1: 1})", "({'1': 1})", "({a: 1, a: 2})", "current.n--1",
        "current.n-- -1", "current.n++ + 1", "current.n += 1", "current.n // c", "current /* c */ .n", "this",
        "arguments", "eval", "current.n\u00a0+ 1", "current.\\u006e", "x => x", "(1, 2)", "[1,,2]", "",
        "current\\u0041", "current.n < = 1", "current.n <== 1", "current.n ==== 1",
    ],
)  # fmt: skip
def test_other_expressions_go_to_a_process(expression: str) -> None:
    assert plain_expression(expression) is None


@pytest.mark.parametrize(
    ("expression", "scope"),
    [
        ("current.missing", {"current": {"n": 1}}),  # undefined
        ("current.toString", {"current": {}}),  # Object.prototype's
        ("current.n + 'x'", {"current": {"n": 1.5}}),  # JavaScript writes some fractions otherwise
        ("current.s + 'x'", {"current": {"s": "\ud83d"}}),  # half of a pair, joined to the other half?
        ("current.s + 'x'", {"current": {"s": [1]}}),
        ("current.n + 1", {"current": {"n": True}}),  # true + 1 is 2
        ("current.n + 1", {"current": {"n": None}}),
        ("current.n + 1", {"current": {"n": 2**53}}),  # rounded there
        ("current.n", {"current": {"n": 2**53 + 1}}),
        ("current.f", {"current": {"f": 1e300}}),  # written with other digits than repr's
        ("current.s", {"current": {"s": "\ud83d\ude00"}}),  # one character once in UTF-16
        ("current", {"current": {"b": 1, "2": 1}}),  # JavaScript puts "2" first
        ("current", {"current": {1: "a"}}),
        ("current === current", {"current": {}}),  # objects compare by identity
        ("current.l[3]", {"current": {"l": [1]}}),
        ("current[0]", {"current": {"0": 1}}),
        ("Math", {"current": 1}),
        ("current.n + current.n", {"current": {"n": 1e308}}),  # Infinity is no JSON value
        ("current", {"current": "x" * (MAX_PAYLOAD + 1)}),
        ("[current, current]", {"current": "x" * (OUTPUT_BYTES // 3)}),  # near the result's limit
    ],
)
def test_what_a_process_might_answer_otherwise_goes_to_one(box: JsSandbox, expression: str, scope: Any) -> None:
    assert plain_expression(expression) is not None
    assert computed(expression, scope) is None


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


def test_depth_is_held_to_the_limits_a_process_holds_it_to(box: JsSandbox) -> None:
    assert computed("input", {"input": nested(MAX_DEPTH)}) == (nested(MAX_DEPTH),)
    wide = {"input": nested(MAX_DEPTH), "current": [[1], [2]] * 10}  # more brackets than the depth: walked
    assert computed("input", wide) == (nested(MAX_DEPTH),)
    assert computed("input", {"input": nested(MAX_DEPTH + 1)}) is None
    assert computed("({a: input})", {"input": nested(MAX_DEPTH)}) is None  # the result is one level deeper
    with pytest.raises(SandboxError, match="nested deeper than the limit"):
        box.evaluate("input", {"input": nested(MAX_DEPTH + 1)})
    with pytest.raises(SandboxError, match="nested deeper than the limit"):
        box.evaluate("({a: input})", {"input": nested(MAX_DEPTH)})


def test_a_plain_expression_needs_no_evaluator_process() -> None:
    with JsSandbox(workers=1) as sandbox:
        assert sandbox.plain_value("({n: current.n + 1})", {"current": {"n": 1}}) == ({"n": 2},)
        assert sandbox.plain_value("current.n > 1", {"current": {"n": 1}}) == (False,)
        assert sandbox.plain_value("current.n + 1", {"current": {"n": "1"}}) == ("11",)
        assert sandbox.plain_value("current.n + 1", {"current": {"n": True}}) is None  # 2: for a process
        assert sandbox.plain_value("Math.max(current.n, 5)", {"current": {"n": 1}}) is None
        assert sandbox.child_pids() == []
        assert sandbox.evaluate("current.n + 1", {"current": {"n": 1}}) == 2  # `evaluate` always asks one
        assert len(sandbox.child_pids()) == 1


def test_a_plain_expression_is_checked_as_any_other() -> None:
    """Closed sandbox, a time limit over the cap, a syntax error, a scope that is not JSON: the
    errors an evaluation in a process raises first."""
    sandbox = JsSandbox(workers=1, max_timeout_s=5.0)
    with pytest.raises(SandboxError, match="over the sandbox's limit"):
        sandbox.plain_value("current.n", {"current": {"n": 1}}, timeout_s=10.0)
    with pytest.raises(SandboxError, match="the scope is not JSON"):
        sandbox.plain_value("current.n", {"current": {1, 2}})
    assert sandbox.plain_value("current.n", {"current": {"n": 1}}) == (1,)
    sandbox.close()
    with pytest.raises(SandboxError, match="closed"):
        sandbox.plain_value("current.n", {"current": {"n": 1}})


def test_the_parse_is_bounded() -> None:
    assert plain_expression("(" * 40 + "1" + ")" * 40) is None
    assert plain_expression("-" * 40 + "1") is None
    assert plain_expression("1" + " + 1" * 1000) is None  # longer than MAX_CHARS
    assert plain_expression("[" * 8 + "1" + "]" * 8) is not None
    assert plain_module.MAX_NESTING < 100
