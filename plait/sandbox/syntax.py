"""Syntax checks of user expressions, by QuickJS's own parser, without running them.

The expression is wrapped in a script that throws before anything in it can run:

    "use strict"; throw "<sentinel>";
    (
    EXPRESSION
    );

QuickJS parses the whole script first, so a syntax error comes back as a parse error with its
line and column (mapped back into the expression); a clean parse comes back as the sentinel.

An expression is spliced into the scripts that evaluate it, so "parses inside `( … )`" is not
enough: `1); let JSON = {}; (1` parses there too, and would escape to the top level of the
evaluation script (where a `let` outlives the evaluation). The check therefore parses it twice,
inside `( … )` and inside `[ … ]`: text that closes the wrapper it sits in cannot close both, so
only a real expression passes. The parses run in a context of their own that never evaluates
anything else; a text that declared something there (possible only for such an escape) gets that
context replaced.

Results are cached (by kind and the text's digest, within a byte bound: `plait.caches`), so the
engine pays for each distinct expression once and no text sent to be checked stays in memory.
"""

from __future__ import annotations

import contextlib
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from plait.caches import bounded, text_weight
from plait.sandbox.errors import JsSyntaxError, SandboxError

Kind = Literal["expression", "function", "body", "script"]
CODE_PARAMS = ("input", "nodes", "current")

SENTINEL = "__plait_parsed__"
CHECK_TIMEOUT_S = 10.0
_HEAD = f'"use strict"; throw "{SENTINEL}";\n'
_HEAD_LINES = 2  # the head and the opening bracket: the expression starts on line 3
_WRAPPERS = (("(", ");"), ("[", "];"))
_PARSE_HEADER = re.compile(r"^(?:SyntaxError: )?(.*)$")
_PARSE_AT = re.compile(r"at <input>:(\d+):(\d+)")
CHECK_MEMORY_BYTES = 64 * 1024 * 1024

_lock = threading.Lock()
_checker: _Checker | None = None


def check_syntax(expression: str, *, kind: Kind = "expression") -> None:
    """Raise `JsSyntaxError(message, line, column)` unless `expression` parses (in strict mode)
    as one JavaScript expression. `kind="function"` is for text that must evaluate to a function
    (`old => ({...old})`); its syntax is that of any expression, whether it is a function is
    known only when it runs. `kind="body"` is for the statements of a CODE node: the body of
    `code_function`; `kind="script"` for a prompt script (`script_function`). Line and column
    are 1-based, within `expression`."""
    if kind in ("body", "script"):
        wrapper = code_function(expression) if kind == "body" else script_function(expression)
        found = _check_cached("function", wrapper)
        if found is not None:
            found = _shift(found, expression)
    else:
        found = _check_cached(kind, expression)
    if found is not None:
        message, line, column = found
        raise JsSyntaxError(message, line, column)


def preload() -> threading.Thread:
    """Start loading QuickJS and the checker's context on a thread; join it before exiting.

    A caller that will check expressions soon (the compiler, on a graph with JavaScript)
    overlaps the loading with its own parsing; the first `check_syntax` then finds it ready."""
    thread = threading.Thread(target=_warm_up, name="plait-js-preload", daemon=True)
    thread.start()
    return thread


def _warm_up() -> None:
    with contextlib.suppress(Exception):  # a failure is reported again, where it matters, by the first check
        _check_cached("expression", "0")


def code_function(body: str) -> str:
    """The function a CODE node's `code` becomes; run it with
    `sandbox.call(code_function(code), input, nodes, current)`. The body starts on its line 2.

    `code` is either a function body that `return`s the output, or a program that declares
    `function main(input, nodes, current)` (or `async function main`): when the body returns
    nothing itself, its `main` is called."""
    params = ", ".join(CODE_PARAMS)
    return (
        f"function __plait_code__({params}) {{\n{body}\n"
        f";return typeof main === 'function' ? main({params}) : undefined;\n}}"
    )


_SCRIPT_HEAD = (
    "function __plait_script__() {{ const getVar = (path) => {b}.request('getVar', [String(path)]);"
    " const getSchemaHint = (target) => {b}.request('getSchemaHint', [String(target)]);"
    " const readRoute = (route, params) =>"
    " {b}.request('readRoute', [String(route), params === undefined ? {{}} : params]);"
    " const console = Object.freeze({{ log: (...a) => {b}.log('log', a), info: (...a) => {b}.log('info', a),"
    " warn: (...a) => {b}.log('warn', a), error: (...a) => {b}.log('error', a) }});"
    # `Promise` (frozen, like every intrinsic) for `Promise.all` over host calls: the global name is
    # gone from every context, but any async function's result reaches it, so naming it here gives
    # a script nothing it could not already reach.
    " const Promise = (async () => {{}})().constructor;"
)
_SCRIPT_TAIL = (
    ";if (typeof main !== 'function') throw new Error('__plait_no_main__');"
    " if (Object.getPrototypeOf(main) !== Object.getPrototypeOf(async function () {})) {"
    " throw new Error('__plait_not_async__'); } return main(); }"
)


_EXPORTED_MAIN = re.compile(r"^([ \t]*)export[ \t]+(?=(?:async[ \t]+)?function[ \t]+main\b)", re.MULTILINE)
"""`export async function main()`, the form the scripts' design writes: a script is a function
body, where `export` is not allowed, so the keyword is blanked (same length: the line and column
an error names stay the script's own)."""


def script_function(code: str, bridge: str = "__plait_bridge__") -> str:
    """The function a prompt script becomes (`plait.sandbox.scripts`): the host APIs and the
    console as local names talking to the run's `bridge`, the script (from its line 2), then
    the call of its `main`."""
    code = _EXPORTED_MAIN.sub(lambda found: found.group(1) + " " * (len(found.group(0)) - len(found.group(1))), code)
    return _SCRIPT_HEAD.format(b=bridge) + "\n" + code + "\n" + _SCRIPT_TAIL


def _shift(found: tuple[str, int | None, int | None], body: str) -> tuple[str, int | None, int | None]:
    message, line, column = found
    if line is None:
        return found
    lines = body.split("\n")
    if line - 1 < 1:
        return (message, 1, 1)
    if line - 1 > len(lines):  # on the closing brace
        if not message.startswith("unexpected end"):
            message = f"unexpected end of the code ({message})"
        return (message.replace("of the expression", "of the code"), len(lines), len(lines[-1]) + 1)
    return (message, line - 1, column)


@bounded("JavaScript syntax checks", max_bytes=4 << 20, weigh=text_weight)
def _check_cached(kind: Kind, expression: str) -> tuple[str, int | None, int | None] | None:
    if not expression.strip():
        return (f"the {kind} is empty", None, None)
    try:
        expression.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"the {kind} is not valid Unicode: {exc.reason}", None, None)
    with _lock:
        global _checker
        if _checker is None:
            _checker = _Checker()
        return _checker.check(expression)


class _Checker:
    """A plain QuickJS context (no lockdown: it never runs the user's code) on a thread of its
    own, as every QuickJS context must be."""

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="plait-js-syntax")
        self._context: Any = None

    def check(self, expression: str) -> tuple[str, int | None, int | None] | None:
        return self._thread.submit(self._check, expression).result()

    def _open(self) -> Any:
        import quickjs

        context = quickjs.Context()
        context.set_memory_limit(CHECK_MEMORY_BYTES)
        context.set_time_limit(CHECK_TIMEOUT_S)
        return context

    def _check(self, expression: str) -> tuple[str, int | None, int | None] | None:
        if self._context is None:
            self._context = self._open()
        for index, (opening, closing) in enumerate(_WRAPPERS):
            script = f"{_HEAD}{opening}\n{expression}\n{closing}"
            try:
                self._context.eval(script)
            except Exception as exc:  # quickjs.JSException: a parse error, or the sentinel
                text = str(exc)
                if SENTINEL in text.partition("\n")[0]:
                    continue
                if "InternalError" in text.partition("\n")[0]:
                    self._context = None
                    raise SandboxError(f"the syntax check failed: {text.partition(chr(10))[0]}") from None
                if index > 0:  # it parsed as an escape from the first wrapper: may have declared names
                    self._context = None
                return parse_error(text, expression)
            self._context = None  # it ran without reaching the sentinel: start clean next time
            return ("not a single expression", None, None)
        return None


def parse_error(text: str, expression: str) -> tuple[str, int | None, int | None]:
    """Message, line and column of a QuickJS parse error, mapped into `expression`.

    QuickJS formats them as `SyntaxError: MESSAGE` and then `    at <input>:LINE:COLUMN`."""
    lines = text.split("\n")
    header = _PARSE_HEADER.match(lines[0]) if lines else None
    if header is None:
        return (lines[0].strip() or "syntax error", None, None)
    message = header.group(1).strip()
    where = _PARSE_AT.search(text)
    if where is None:
        return (message, None, None)
    line, column = int(where.group(1)) - _HEAD_LINES, int(where.group(2))
    source_lines = expression.split("\n")
    if line < 1:
        return (message, 1, 1)
    if line > len(source_lines):  # on the closing bracket: the expression ended too early
        return (f"unexpected end of the expression ({message})", len(source_lines), len(source_lines[-1]) + 1)
    return (message, line, column)
