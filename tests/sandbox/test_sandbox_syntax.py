"""`check_syntax`: QuickJS's parser, strict mode, positions inside the expression, nothing run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from plait.sandbox import JsSandbox, JsSyntaxError, check_syntax, code_function

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    "expression",
    [
        "nodes.classify.label",
        "({label: nodes.classify.label,\n"
        "  action: current.join.file_bug ? `bug filed: ${current.join.file_bug.title}`\n  : 'none'})",
        "{a: 1}",
        "a, b",
        "x => x * 2",
        "async () => 1",
        "// a comment\n1",
        "1 // trailing comment",
        "/* block */ 1",
        "input.text.replace(/\\)/g, '')",
        "')' + ']'",
        "`${')'}`",
    ],
)
def test_valid(expression: str) -> None:
    check_syntax(expression)
    check_syntax(expression, kind="function")


@pytest.mark.parametrize(
    ("expression", "message", "line", "column"),
    [
        ("nodes.classify.", "unexpected end of the expression (expecting field name)", 1, 16),
        ("1 +", "unexpected end of the expression", 1, 4),
        ("({a: 1,\n  b: })", "unexpected token in expression: '}'", 2, 6),
        ("input.\n  foo bar", "Unexpected identifier 'bar'", 2, 7),
        ("'unterminated", "unexpected end of string", 1, 1),
        ("`${", "unexpected end of the expression", 1, 4),
        ("while (true) {}", "unexpected token in expression: 'while'", 1, 1),
        ("let x = 1", "unexpected token in expression: 'let'", 1, 1),
        ("return 1", "unexpected token in expression: 'return'", 1, 1),
        ("(() => { with ({}) {} })()", "invalid keyword: with", 1, 10),
        ("010", "Octal literals are not allowed in strict mode", 1, 1),
        ("...x", "unexpected token in expression: '...'", 1, 1),
    ],
)
def test_invalid(expression: str, message: str, line: int, column: int) -> None:
    with pytest.raises(JsSyntaxError) as info:
        check_syntax(expression)
    assert message in info.value.message
    assert (info.value.line, info.value.column) == (line, column), info.value
    assert f"(line {line}, column {column})" in str(info.value)


@pytest.mark.parametrize(
    "escape",
    [
        "1); let JSON = {}; (1",
        "1), (2",
        "1]; globalThis.x = 1; [1",
        "1\n); var leaked = 1; (\n1",
        "1); class C {}; (1",
        "0); }); (function () {",
    ],
)
def test_text_that_closes_the_wrapper_is_not_an_expression(escape: str) -> None:
    with pytest.raises(JsSyntaxError):
        check_syntax(escape)
    with pytest.raises(JsSyntaxError):
        check_syntax(escape, kind="function")


def test_escape_attempt_changes_nothing_later(sandbox: JsSandbox) -> None:
    with pytest.raises(JsSyntaxError):
        sandbox.evaluate("1); let JSON = {stringify: () => 'hijacked'}; (1", {})
    assert sandbox.evaluate("JSON.stringify({a: 1})", {}) == '{"a":1}'
    check_syntax("JSON")  # the checker did not keep the `let JSON` either


def test_nothing_runs_during_a_check() -> None:
    # would spin forever (or throw) if any of it ran
    check_syntax("(() => { while (true) {} })()")
    check_syntax("(() => { throw new Error('ran') })()")


def test_empty_and_unicode() -> None:
    with pytest.raises(JsSyntaxError, match="empty"):
        check_syntax("  \n ")
    with pytest.raises(JsSyntaxError, match="Unicode"):
        check_syntax("'\ud800'")
    check_syntax("'日本語' + `😀`")


def test_checks_do_not_need_a_sandbox_and_are_cached() -> None:
    import time

    expression = "input.a.b.c + 12345"
    check_syntax(expression)
    start = time.perf_counter()
    for _ in range(1000):
        check_syntax(expression)
    assert time.perf_counter() - start < 0.1


@pytest.mark.parametrize(
    ("body", "error", "line", "column"),
    [
        ("return {count: input.text.split(' ').length};", None, None, None),
        ("const words = input.text.split(' ');\nreturn {count: words.length};", None, None, None),
        ("const words = input.text.split(' ');\nconst = words.length;", "variable name expected", 2, 7),
        ("let input = 1;\nreturn input;", "invalid redefinition of parameter name", 1, 11),
        ("return {count: 1", "unexpected end of the code", 1, 17),
    ],
)
def test_code_bodies(body: str, error: str | None, line: int | None, column: int | None) -> None:
    """A CODE node's `code` is the body of `function main(input, nodes, current)`."""
    if error is None:
        check_syntax(body, kind="body")
        return
    with pytest.raises(JsSyntaxError) as info:
        check_syntax(body, kind="body")
    assert error in info.value.message
    assert (info.value.line, info.value.column) == (line, column)


def test_code_function_runs_in_the_sandbox(sandbox: JsSandbox) -> None:
    body = "const words = input.text.split(' ');\nreturn {count: words.length, first: nodes.a.x, current};"
    result = sandbox.call(code_function(body), {"text": "a b c"}, {"a": {"x": 1}}, None)
    assert result == {"count": 3, "first": 1, "current": None}


@pytest.mark.parametrize(("graph", "loads_quickjs"), [("blog_writer.yaml", False), ("feedback_triage.yaml", True)])
def test_validate_loads_quickjs_only_for_graphs_with_javascript(graph: str, loads_quickjs: bool) -> None:
    code = (
        "import sys\n"
        "from plait.compile import compile_file\n"
        f"assert compile_file({str(EXAMPLES / graph)!r}).valid\n"
        "print('_quickjs' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == str(loads_quickjs), out.stderr
