"""Values in and out of the sandbox: nesting limits and Dates are refused with a clear error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from plait.model.limits import MAX_DEPTH
from plait.sandbox import JsRuntimeError, JsSandbox, SandboxError


@pytest.fixture(scope="module")
def box() -> Iterator[JsSandbox]:
    with JsSandbox(workers=1) as sandbox:
        yield sandbox


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500, 5_000])
def test_a_result_nested_too_deep_is_refused_not_a_crash(box: JsSandbox, depth: int) -> None:
    expression = f"(() => {{ let v = 1; for (let i = 0; i < {depth}; i++) v = {{a: v}}; return v }})()"
    with pytest.raises(JsRuntimeError, match=f"the result is nested deeper than the limit of {MAX_DEPTH} levels"):
        box.evaluate(expression, {})
    assert box.evaluate("input", {"input": nested(MAX_DEPTH)}) == nested(MAX_DEPTH)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 100_000])
def test_a_scope_or_argument_nested_too_deep_is_refused(box: JsSandbox, depth: int) -> None:
    with pytest.raises(SandboxError, match=f"the scope is nested deeper than the limit of {MAX_DEPTH} levels"):
        box.evaluate("input", {"input": nested(depth)})
    with pytest.raises(SandboxError, match=f"the arguments are nested deeper than the limit of {MAX_DEPTH} levels"):
        box.call("x => x", nested(depth))
    assert box.evaluate("1", {}) == 1


@pytest.mark.parametrize("expression", ["new Date(0)", "({when: new Date(0)})", "[1, new Date()]"])
def test_a_date_in_the_result_is_an_error_not_a_string(box: JsSandbox, expression: str) -> None:
    with pytest.raises(JsRuntimeError, match=r"not a JSON value: it contains a Date; return date.toISOString\(\)"):
        box.evaluate(expression, {})
    assert box.evaluate("new Date(0).toISOString()", {}) == "1970-01-01T00:00:00.000Z"
