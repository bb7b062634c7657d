"""Plain expressions: the value of an expression that only reads its scope, computed without a process.

An evaluation in an evaluator process is a round trip through a pipe to another process, which
on a virtual machine costs 0.1-0.4 ms (a process asleep on another CPU is woken each way), and
more on a busy host, where the evaluator (`_child.py`, at a lower priority) waits for a CPU. Many
TRANSFORM and CONDITION expressions only pick and reshape what they are given:
`({n: current.n + 1})`, `({title: current.title, tags: current.tags})`, `nodes.grade.score >= 3`.
An expression in the grammar below is computed here, in Python, with JavaScript's meaning
exactly; nothing of JavaScript runs (no call, no loop, no prototype is ever reached). Whenever the
answer might differ from what QuickJS would give, or be an error, the expression goes to an
evaluator process as any other, which gives the value or the error it always gave: a field the
value does not have, an operand of another type, a number past 2**53, a text holding a surrogate,
an object key a JavaScript object would reorder (`"2"`), a scope or a result near its limits.
`tests/sandbox/test_plain.py` holds the two to the same answers, on generated expressions and
scopes.

    expression := equality
    equality   := relational (("===" | "!==") relational)*
    relational := additive (("<" | "<=" | ">" | ">=") additive)*
    additive   := unary (("+" | "-") unary)*
    unary      := "-" unary | member
    member     := primary ("." NAME | "[" INTEGER "]" | "[" STRING "]")*
    primary    := INTEGER | STRING | "true" | "false" | "null" | NAME | object | array | "(" expression ")"
    object     := "{" [key ":" expression ("," key ":" expression)* [","]] "}"    key := NAME | STRING
    array      := "[" [expression ("," expression)* [","]] "]"

Numbers are decimal integer literals. `+` adds numbers, or joins a text with a text, an integer,
a boolean or null; `-` takes numbers; `<`, `<=`, `>`, `>=` numbers; `===` and `!==` any two
values but objects and arrays (JavaScript compares those by identity). A NAME alone is one of
the scope's names; `.length` of an array is its length.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from plait.caches import bounded
from plait.model.limits import MAX_DEPTH

MAX_SAFE = 2**53 - 1
"""`Number.MAX_SAFE_INTEGER`: integers up to it are exact in JavaScript, as in Python."""
MAX_CHARS = 2000
"""Longer expressions go to a process (their parse is cached, and bounded)."""
MAX_NESTING = 32
"""Deeper brackets go to a process (the parse here is recursive)."""
MAX_PAYLOAD = 64 << 10
"""A scope whose JSON is larger goes to a process: what is computed here runs on the event loop,
and must stay as short as the encoding of the scope that every evaluation pays anyway."""
MAX_COPIED = 16_384
"""Values a result may copy from its scope (`[current, current, ...]`): beyond, a process."""

_TOKEN = re.compile(
    r"""(?P<int>0|[1-9][0-9]*)(?![0-9A-Za-z_$.\\])
    | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)(?![\\\u0080-\U0010ffff])
    | (?P<str>"[^"\\\n\r\u2028\u2029]*"|'[^'\\\n\r\u2028\u2029]*')
    | (?P<op>===|!==|<=|>=|\+(?![+=])|-(?![-=])|[<>(){}\[\],:.])""",
    re.VERBOSE,
)
"""One token. `+` and `-` must not run into `+`, `-` or `=` (`a-- -b` is `(a--) - b`, `a+=1` an
assignment); a number not into a name, a dot or a digit (`1e3`, `1.5`, `0x1`, `1n`, `01`); a
name not into a backslash or a non-ASCII character (an escape, or a longer name than read here).
Any other run of characters is no token: the expression is not plain."""
_SPACE = re.compile(r"[ \t\r\n]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONSTANTS = {"true": True, "false": False, "null": None}
_RESERVED_WORDS = (
    "arguments await break case catch class const continue debugger default delete do else enum eval export "
    "extends finally for function if implements import in instanceof interface let new package private "
    "protected public return static super switch this throw try typeof var void while with yield"
)
_RESERVED = frozenset(_RESERVED_WORDS.split())
"""Names that are not a plain reference to a scope name as a primary (`true` and friends are
read as constants first)."""

Node = tuple[Any, ...]


class _Unplain(Exception):
    """This expression, or this evaluation of it, is for a process."""


class Plain:
    """A parsed plain expression; `value` computes it on a scope."""

    __slots__ = ("_tree",)

    def __init__(self, tree: Node) -> None:
        self._tree = tree

    def value(self, scope: Mapping[str, Any], payload: bytes, max_output_bytes: int) -> tuple[Any] | None:
        """`(value,)` as an evaluator process would answer for `scope` (whose JSON, as sent, is
        `payload`); None when a process must answer (the answer could differ, or be an error)."""
        if len(payload) > MAX_PAYLOAD or not _shallow(payload, scope):
            return None
        try:
            result = _Copy().json_value(_evaluate(self._tree, scope), 1)
        except _Unplain:
            return None
        if 2 * len(_ENCODE(result).encode("utf-8", "surrogatepass")) > max_output_bytes:
            return None  # near the result's limit: the process measures it exactly
        return (result,)


@bounded("plain expressions", max_bytes=4 << 20, weigh=lambda _, args: 8 * len(args[0]) + 256)
def plain_expression(expression: str) -> Plain | None:
    """`expression` parsed, when it is plain (see the module docstring); None: it is not."""
    if len(expression) > MAX_CHARS:
        return None
    try:
        parser = _Parser(expression)
        tree = parser.expression(0)
        parser.end()
    except _Unplain:
        return None
    return Plain(tree)


# --- parsing ------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        at, size = 0, len(text)
        while True:
            space = _SPACE.match(text, at)
            at = space.end() if space is not None else at
            if at == size:
                break
            match = _TOKEN.match(text, at)
            if match is None or match.lastgroup is None:
                raise _Unplain
            self.tokens.append((match.lastgroup, match.group(match.lastgroup)))
            at = match.end()
        self.at = 0

    def end(self) -> None:
        if self.at != len(self.tokens):
            raise _Unplain

    def _peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def _take(self, op: str) -> bool:
        if self._peek() == ("op", op):
            self.at += 1
            return True
        return False

    def _expect(self, op: str) -> None:
        if not self._take(op):
            raise _Unplain

    def expression(self, depth: int) -> Node:
        if depth > MAX_NESTING:
            raise _Unplain
        return self._binary(depth, 0)

    _LEVELS = (("===", "!=="), ("<", "<=", ">", ">="), ("+", "-"))

    def _binary(self, depth: int, level: int) -> Node:
        if level == len(self._LEVELS):
            return self._unary(depth)
        left = self._binary(depth, level + 1)
        while self._peek()[0] == "op" and self._peek()[1] in self._LEVELS[level]:
            op = self.tokens[self.at][1]
            self.at += 1
            left = ("op", op, left, self._binary(depth, level + 1))
        return left

    def _unary(self, depth: int) -> Node:
        if self._take("-"):
            if depth > MAX_NESTING:
                raise _Unplain
            return ("neg", self._unary(depth + 1))
        return self._member(depth)

    def _member(self, depth: int) -> Node:
        node = self._primary(depth)
        while True:
            if self._take("."):
                kind, name = self._peek()
                if kind != "name":
                    raise _Unplain
                self.at += 1
                node = ("get", node, name)
            elif self._take("["):
                kind, text = self._peek()
                if kind == "int":
                    key: str | int = _integer(text)
                elif kind == "str":
                    key = text[1:-1]
                else:
                    raise _Unplain
                self.at += 1
                self._expect("]")
                node = ("get", node, key)
            else:
                return node

    def _primary(self, depth: int) -> Node:
        kind, text = self._peek()
        self.at += 1
        if kind == "int":
            return ("const", _integer(text))
        if kind == "str":
            return ("const", text[1:-1])
        if kind == "name":
            if text in _CONSTANTS:
                return ("const", _CONSTANTS[text])
            if text in _RESERVED:
                raise _Unplain
            return ("name", text)
        if text == "(" and kind == "op":
            inner = self.expression(depth + 1)
            self._expect(")")
            return inner
        if text == "{" and kind == "op":
            return self._object(depth + 1)
        if text == "[" and kind == "op":
            return self._array(depth + 1)
        raise _Unplain

    def _object(self, depth: int) -> Node:
        fields: list[tuple[str, Node]] = []
        while not self._take("}"):
            kind, text = self._peek()
            if kind == "name":
                key = text
            elif kind == "str":
                key = text[1:-1]
            else:
                raise _Unplain
            self.at += 1
            # `__proto__: x` sets the prototype; a key of digits is ordered first; a repeated
            # key keeps its first place: none of them is what a dict does
            if key == "__proto__" or _index_like(key) or key in (k for k, _ in fields):
                raise _Unplain
            self._expect(":")
            fields.append((key, self.expression(depth)))
            if not self._take(","):
                self._expect("}")
                break
        return ("object", tuple(fields))

    def _array(self, depth: int) -> Node:
        items: list[Node] = []
        while not self._take("]"):
            items.append(self.expression(depth))
            if not self._take(","):
                self._expect("]")
                break
        return ("array", tuple(items))


def _integer(text: str) -> int:
    value = int(text)
    if value > MAX_SAFE:
        raise _Unplain
    return value


def _index_like(key: str) -> bool:
    """A key JavaScript might order before the others (an array index is made of digits)."""
    return key.isascii() and key.isdigit()


# --- evaluating ---------------------------------------------------------------------------------


def _evaluate(node: Node, scope: Mapping[str, Any]) -> Any:
    kind = node[0]
    if kind == "get":
        return _get(_evaluate(node[1], scope), node[2])
    if kind == "const":
        return node[1]
    if kind == "name":
        if node[1] not in scope:
            raise _Unplain  # a global (Math, undefined, ...) or a name not given
        return scope[node[1]]
    if kind == "op":
        return _operate(node[1], _evaluate(node[2], scope), _evaluate(node[3], scope))
    if kind == "object":
        return {key: _evaluate(value, scope) for key, value in node[1]}
    if kind == "array":
        return [_evaluate(item, scope) for item in node[1]]
    return -_number(_evaluate(node[1], scope))  # "neg"


def _get(value: Any, key: str | int) -> Any:
    """`value[key]` where the answer is certain: an object's own field, an array's item or length."""
    kind = type(value)
    if kind is dict and type(key) is str:
        if key not in value:
            raise _Unplain  # undefined, or a property of Object.prototype
        return value[key]
    if kind is list or kind is tuple:
        if type(key) is int and key < len(value):
            return value[key]
        if key == "length":
            return len(value)
    raise _Unplain


def _number(value: Any) -> int | float:
    """`value` as a JavaScript number, when it is one and exact in both languages."""
    kind = type(value)
    if kind is int:
        if -MAX_SAFE <= value <= MAX_SAFE:
            return int(value)
        raise _Unplain  # a double in JavaScript: already rounded there
    if kind is float:
        return float(value)
    raise _Unplain  # a text, a boolean, null, an object: JavaScript would convert it


def _operate(op: str, left: Any, right: Any) -> Any:
    if op == "+" and (type(left) is str or type(right) is str):
        text = _text(left) + _text(right)
        if len(text) > MAX_PAYLOAD:
            raise _Unplain  # a process measures it against the result's limit
        return text
    if op == "+" or op == "-":
        a, b = _number(left), _number(right)
        result = a + b if op == "+" else a - b
        if type(result) is int and not -MAX_SAFE <= result <= MAX_SAFE:
            raise _Unplain  # rounded in JavaScript
        return result
    if op == "===" or op == "!==":
        same = _strictly_equal(left, right)
        return same if op == "===" else not same
    a, b = _number(left), _number(right)
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


def _text(value: Any) -> str:
    """What `+` joins when one side is a text: JavaScript's `String(value)`, where it is certain."""
    kind = type(value)
    if kind is str:
        text: str = value
        if not text.isascii() and _SURROGATE.search(text) is not None:
            raise _Unplain  # halves of a pair may join into one character there
        return text
    if kind is int:
        return str(_number(value))
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    raise _Unplain  # a number with a fraction (JavaScript writes some otherwise), an object, an array


def _strictly_equal(left: Any, right: Any) -> bool:
    """JavaScript's `===` between two primitive values (an object or an array: for a process)."""
    kinds = (_primitive(left), _primitive(right))
    if kinds[0] != kinds[1]:
        return False
    if kinds[0] == "number":
        return bool(_number(left) == _number(right))
    return bool(left == right)


def _primitive(value: Any) -> str:
    kind = type(value)
    if kind is bool:
        return "boolean"
    if kind is int or kind is float:
        return "number"
    if kind is str:
        if _SURROGATE.search(value) is not None:
            raise _Unplain  # the same text as UTF-16 may be another here
        return "string"
    if value is None:
        return "null"
    raise _Unplain


class _Copy:
    """`json_value`, with its count of values copied."""

    __slots__ = ("copied",)

    def __init__(self) -> None:
        self.copied = 0

    def json_value(self, value: Any, depth: int) -> Any:
        """`value` as it comes back from a process (its JSON, read back): a copy, integral numbers
        as integers; `_Unplain` where the round trip would change it, or refuse it."""
        kind = type(value)
        if kind is str:
            if not value.isascii() and _SURROGATE.search(value) is not None:
                raise _Unplain
            return value
        if kind is int:
            return _number(value)
        if kind is float:
            if not math.isfinite(value) or abs(value) > MAX_SAFE:
                raise _Unplain  # refused there (Infinity), or printed with other digits than repr's
            return int(value) if value.is_integer() else value
        if value is None or kind is bool:
            return value
        self.copied += 1
        if depth > MAX_DEPTH or self.copied > MAX_COPIED:
            raise _Unplain
        if kind is dict:
            out: dict[str, Any] = {}
            for key, item in value.items():
                if type(key) is not str or _index_like(key) or (not key.isascii() and _SURROGATE.search(key)):
                    raise _Unplain
                out[key] = self.json_value(item, depth + 1)
            return out
        if kind is list or kind is tuple:
            return [self.json_value(item, depth + 1) for item in value]
        raise _Unplain


def _shallow(payload: bytes, scope: Mapping[str, Any]) -> bool:
    """Whether the scope is within the depth a process accepts (each value's objects counted
    from 1, as the runner counts them inside the array of arguments): at once when its JSON has
    no more brackets than that, else by walking it."""
    if payload.count(b"{") + payload.count(b"[") <= MAX_DEPTH + 1:
        return True
    stack: list[tuple[Any, int]] = [(value, 1) for value in scope.values()]
    while stack:
        value, depth = stack.pop()
        kind = type(value)
        if kind is dict or kind is list or kind is tuple:
            if depth > MAX_DEPTH:
                return False
            stack.extend((item, depth + 1) for item in (value.values() if kind is dict else value))
    return True


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
