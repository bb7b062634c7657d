"""Limits on the JSON values that enter or leave Plait: run inputs, node outputs, overrides,
migration results, tool results and imported graphs.

Every value Plait stores must survive being encoded as UTF-8 JSON, read back and rendered by
every surface (the CLI, the HTTP API's serializer, the sandbox's JSON bridge). A value breaks
that promise when it is nested deeper than the serializers recurse, holds a lone UTF-16
surrogate (`"\\ud800"`: not encodable as UTF-8, so the database write fails), a non-finite
number (JSON has no NaN or Infinity), or an integer too long for Python to print. Such values
are refused where they enter, with the path of the offending part, instead of failing later
where nobody can tell where they came from.

    problem = value_problem(data)          # None, or the first problem found
    if problem: print(problem.describe("input"))   # "input.a.b[2]: the string holds a lone surrogate ..."
    check_value(data, "input")            # the same, raising ValueLimitError

The walk is iterative: a value nested 100,000 levels is reported, not a RecursionError.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 100
"""How deeply objects and arrays may nest in any value Plait accepts (a scalar is depth 0,
`{"a": [1]}` is depth 2). Serializers elsewhere give up between 200 and 1,000 levels; no
real document needs more than a few dozen."""

MAX_INT_DIGITS = 4300
"""The most digits an integer may have: Python's own limit for turning one into text."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_PATH_ENDS = 4


@dataclass(frozen=True, slots=True)
class ValueProblem:
    """One reason a value is refused, and where in the value it is."""

    path: tuple[str | int, ...]
    """Keys and indexes from the root to the offending part."""
    message: str

    def location(self, root: str) -> str:
        """`root.key[3].other`, the way templates name paths; a very deep path keeps its ends."""
        parts = [_part(part) for part in self.path]
        if len(parts) > 2 * _PATH_ENDS:
            parts = [*parts[:_PATH_ENDS], f"…({len(parts) - 2 * _PATH_ENDS} more)…", *parts[-_PATH_ENDS:]]
        out = root
        for part in parts:
            out += part if part.startswith("[") or not out else f".{part}"
        return out

    def describe(self, root: str) -> str:
        return f"{self.location(root) or '(root)'}: {self.message}"


class ValueLimitError(ValueError):
    """A value breaks one of the limits above; `problem` says where and which."""

    def __init__(self, problem: ValueProblem, root: str) -> None:
        self.problem = problem
        self.root = root
        super().__init__(problem.describe(root))


def value_problem(value: Any, *, max_depth: int = MAX_DEPTH) -> ValueProblem | None:
    """The first part of `value` that Plait cannot store or pass on, or None.

    Accepts what JSON decoding produces (dict, list, str, int, float, bool, None) and tuples;
    any other type is a problem too (it would fail the JSON encoder later)."""
    if _fine(value, 0, max_depth):  # the common case, without the paths the walk below keeps
        return None
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            problem = _string_problem(item)
            if problem is not None:
                return ValueProblem(path, problem)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if item.bit_length() > MAX_INT_DIGITS * 3.32 and len(_digits(item)) > MAX_INT_DIGITS:
                return ValueProblem(path, f"the integer has more than {MAX_INT_DIGITS} digits")
        elif isinstance(item, float):
            if not math.isfinite(item):
                return ValueProblem(path, f"{item} is not a JSON number (JSON has no NaN or Infinity)")
        elif isinstance(item, dict):
            if len(path) >= max_depth:
                return ValueProblem(path, f"the value is nested deeper than the limit of {max_depth} levels")
            for key, child in item.items():
                if not isinstance(key, str):
                    return ValueProblem(path, f"object keys must be strings, not {type(key).__name__}")
                problem = _string_problem(key)
                if problem is not None:
                    return ValueProblem((*path, key), f"the key {problem.removeprefix('the string ')}")
                stack.append((child, (*path, key)))
        elif isinstance(item, list | tuple):
            if len(path) >= max_depth:
                return ValueProblem(path, f"the value is nested deeper than the limit of {max_depth} levels")
            stack.extend((child, (*path, index)) for index, child in enumerate(item))
        else:
            return ValueProblem(path, f"a {type(item).__name__} is not a JSON value")
    return None


def _fine(item: Any, depth: int, max_depth: int) -> bool:
    """True when `item` certainly breaks no limit; False when `value_problem`'s walk must look.

    Recursive but bounded: it gives up (False) past `max_depth`, so it never nests deeper than
    the limit. Only the exact JSON types are vouched for here; anything else is left to the walk.
    """
    kind = type(item)
    if kind is str:
        return item.isascii() or _SURROGATE.search(item) is None
    if kind is dict:
        if depth >= max_depth:
            return False
        for key, child in item.items():
            if type(key) is not str or not (key.isascii() or _SURROGATE.search(key) is None):
                return False
            if type(child) not in _PLAIN and not _fine(child, depth + 1, max_depth):
                return False
        return True
    if kind is list:
        if depth >= max_depth:
            return False
        return all(type(child) in _PLAIN or _fine(child, depth + 1, max_depth) for child in item)
    if kind is int:
        return bool(item.bit_length() <= MAX_INT_DIGITS * 3.32)
    if kind is float:
        return math.isfinite(item)
    return item is None or kind is bool


_PLAIN = frozenset({bool, type(None)})
"""Types with nothing to check at any depth."""


def check_value(value: Any, root: str, *, max_depth: int = MAX_DEPTH) -> None:
    """Raise `ValueLimitError` naming `root` and the path when `value_problem` finds one."""
    problem = value_problem(value, max_depth=max_depth)
    if problem is not None:
        raise ValueLimitError(problem, root)


def _part(part: str | int) -> str:
    """One path step, printable: a key holding a surrogate is shown escaped."""
    if isinstance(part, int):
        return f"[{part}]"
    return part if _SURROGATE.search(part) is None else part.encode("utf-8", "backslashreplace").decode("ascii")


def _string_problem(text: str) -> str | None:
    if text.isascii():
        return None
    match = _SURROGATE.search(text)
    if match is None:
        return None
    return (
        f"the string holds a lone surrogate (U+{ord(match.group()):04X}) at character {match.start()}, "
        "which is not valid Unicode text and cannot be stored"
    )


def _digits(number: int) -> str:
    try:
        return str(abs(number))
    except ValueError:  # over the interpreter's int-to-text limit
        return "9" * (MAX_INT_DIGITS + 1)


def storable(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """`value` made safe to store as a record of what happened (an attempt, a snapshot, an error):
    unchanged when `value_problem` finds nothing, else a copy in which every offending part is
    replaced by text saying what it was (a lone surrogate as its `\\udXXX` escape, a too-deep
    part by a marker). For records only: a node *output* that breaks a limit fails its node."""
    if value is None or fine_text(value, max_depth=max_depth) is not None:
        return value
    if value_problem(value, max_depth=max_depth) is None:
        return value
    return _storable(value, 0, max_depth)


_STRICT = json.JSONEncoder(ensure_ascii=False, check_circular=False, allow_nan=False, separators=(",", ":")).encode
"""The store's JSON text (compact, non-ASCII kept), refusing NaN and Infinity."""


def fine_text(value: Any, *, max_depth: int = MAX_DEPTH) -> str | None:
    """`value`'s compact JSON text when the text shows that the value certainly breaks no limit;
    None says nothing (`value_problem` must look). The encoder, in C, walks a record several times
    faster than `_fine`: the value encodes (no NaN, no integer too long, nothing but JSON types and
    tuples), its text holds no surrogate, and it has fewer brackets than the depth limit. Keys
    that are not strings encode as text, which is how a record stores them anyway: for records,
    not outputs."""
    try:
        text: str = _STRICT(value)
    except (TypeError, ValueError, RecursionError):
        return None
    if not text.isascii() and _SURROGATE.search(text) is not None:
        return None
    return text if text.count("{") + text.count("[") <= max_depth else None


def _storable(item: Any, depth: int, max_depth: int) -> Any:
    if isinstance(item, str):
        return item if _SURROGATE.search(item) is None else item.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(item, bool) or item is None:
        return item
    if isinstance(item, int):
        digits = _digits(item)
        return item if len(digits) <= MAX_INT_DIGITS else f"(an integer of more than {MAX_INT_DIGITS} digits)"
    if isinstance(item, float):
        return item if math.isfinite(item) else str(item)
    if isinstance(item, dict | list | tuple) and depth >= max_depth:
        return f"(nested deeper than {max_depth} levels: not kept)"
    if isinstance(item, dict):
        return {
            _storable(str(key), depth, max_depth): _storable(child, depth + 1, max_depth) for key, child in item.items()
        }
    if isinstance(item, list | tuple):
        return [_storable(child, depth + 1, max_depth) for child in item]
    return f"(a {type(item).__name__}, not a JSON value)"
