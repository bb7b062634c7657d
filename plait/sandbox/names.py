"""Which members of a scope name an expression reads, found in its text without running it.

An expression sees `nodes`: every completed node's output. Handing all of them to every
evaluation makes a run's cost grow with the square of its length (a 10,000-node chain would
encode ~50 million outputs as JSON), though an expression names one or two. So the engine
passes only the outputs an expression names as `nodes.id`, `nodes?.id` or `nodes["id"]`; an
expression that uses `nodes` in any other way (passes it on, iterates it, indexes it with a
computed key) gets all of them. The reading is conservative: text that merely looks like such a
use (inside a string or a comment) adds a name, which costs nothing; no real use is missed,
because every occurrence of the binding that is not a plain member read means "all".

    named_members("({n: nodes.a.n + nodes['b'].n})")   # frozenset({'a', 'b'})
    named_members("Object.keys(nodes).length")          # None: every output
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from plait.caches import bounded, text_weight

_IDENTIFIER = r"[A-Za-z_$][\w$]*"
_MEMBER = re.compile(
    rf"\s*(?:\?\.|\.)\s*(?P<dot>{_IDENTIFIER})"
    r"|\s*(?:\?\.)?\s*\[\s*(?:'(?P<single>[^'\\\n]*)'|\"(?P<double>[^\"\\\n]*)\")\s*\]"
)


@bounded("names expressions read", max_bytes=4 << 20, weigh=text_weight)
def named_members(source: str, binding: str = "nodes") -> frozenset[str] | None:
    """The members of `binding` that `source` reads by a literal name, or None when it may read
    any (it uses the binding other than as `binding.name` / `binding["name"]`)."""
    names: set[str] = set()
    for use in re.finditer(rf"(?<![\w$]){re.escape(binding)}(?![\w$])", source):
        before = _last_non_blank(source, use.start())
        if before >= 0 and source[before] == "." and source[max(before - 2, 0) : before + 1] != "...":
            continue  # `x.nodes`, `x?.nodes`: a property of something else (`...nodes` spreads the binding)
        member = _MEMBER.match(source, use.end())
        if member is None:
            return None
        names.add(member.group("dot") or member.group("single") or member.group("double") or "")
    return frozenset(names)


def _last_non_blank(source: str, end: int) -> int:
    """The position of the last character before `end` that is not a space or a tab (-1: none),
    found without copying the text before it (that would be quadratic in the number of uses)."""
    at = end - 1
    while at >= 0 and source[at] in " \t":
        at -= 1
    return at


_CALLED = re.compile(r"\s*\(")
_MAIN = re.compile(r"\b(?:async\s+)?(?:function|def)\s+main\s*\((?P<params>[^)]*)\)")
_PY_MEMBER = re.compile(r"\s*\[\s*(?:'(?P<single>[^'\\\n]*)'|\"(?P<double>[^\"\\\n]*)\")\s*\]")


def code_reads(code: str, language: str = "js") -> frozenset[str] | None:
    """The outputs a CODE node's `code` reads by a literal name, or None when it may read any.

    Its `main` receives the outputs as its second parameter: a `main` that names it otherwise
    reads them under that name, which a text scan does not follow (None). Python reads a dict,
    so only `nodes["id"]` is a read by name there (`nodes.get(...)` may read any)."""
    main = _MAIN.search(code)
    if main is not None:
        params = [p.strip().split("=")[0].split(":")[0].strip() for p in main.group("params").split(",")]
        if len(params) > 1 and params[1] != "nodes":
            return None
        code = code[: main.start("params")] + " " * len(main.group("params")) + code[main.end("params") :]
    if language != "python":
        return named_members(code)
    names: set[str] = set()
    for use in re.finditer(r"(?<![\w.])nodes(?!\w)", code):
        member = _PY_MEMBER.match(code, use.end())
        if member is None:
            return None
        names.add(member.group("single") or member.group("double") or "")
    return frozenset(names)


Segment = str | int
_CHAIN_STEP = re.compile(
    rf"\s*(?:\?\.|\.)\s*(?P<dot>{_IDENTIFIER})"
    r"|\s*(?:\?\.)?\s*\[\s*(?:'(?P<single>[^'\\\n]*)'|\"(?P<double>[^\"\\\n]*)\"|(?P<index>\d+))\s*\]"
)


def bindings_pattern(bindings: Iterable[str]) -> re.Pattern[str]:
    """What finds `bindings` in code for `member_paths`. Its cost grows with the number of names:
    a validator that scans every node's expression for every node's name builds it once."""
    names = "|".join(re.escape(b) for b in bindings)
    return re.compile(rf"({names})(?![\w$])")


_SCOPE = bindings_pattern(("input", "nodes", "current"))
_NOT_A_START = re.compile(r"[\w$.]")
"""The character before a name that makes it part of a longer name or a property (`x.nodes`)."""


def member_paths(source: str, bindings: tuple[str, ...] | re.Pattern[str] = _SCOPE) -> list[tuple[Segment, ...]]:
    """Every literal path an expression reads from one of `bindings` (`nodes.extract.items[0]`
    gives ('nodes', 'extract', 'items', 0)), outside strings and comments, so that a validator
    can check them against the schemas as it checks template paths. A path stops at a computed
    step, and loses its last step when that is a method called (`text.trim()`). `bindings` are
    names, or the pattern `bindings_pattern` made of them."""
    code = code_only(source)
    paths: list[tuple[Segment, ...]] = []
    pattern = bindings if isinstance(bindings, re.Pattern) else bindings_pattern(bindings)
    for use in pattern.finditer(code):
        if use.start() and _NOT_A_START.match(code, use.start() - 1):
            continue  # checked here, not by a lookbehind: a pattern that starts with one scans ~10x slower
        path: list[Segment] = [use.group(1)]
        end = use.end()
        while (step := _CHAIN_STEP.match(source, end)) is not None:  # subscripts keep their strings
            index = step.group("index")
            name = step.group("dot") or step.group("single") or step.group("double") or ""
            path.append(int(index) if index is not None else name)
            end = step.end()
        if len(path) > 1 and _CALLED.match(code, end):
            path.pop()
        if len(path) > 1:
            paths.append(tuple(path))
    return paths


def code_only(source: str) -> str:
    """`source` with its comments and the text of its string literals blanked (the same length,
    so positions hold): what is left is code. Template literals keep their `${...}` parts.

    Every step is one compiled pattern, so the scan is linear and runs in C: a megabyte string
    literal costs milliseconds, not seconds of the server's time."""
    parts: list[str] = []
    i, n = 0, len(source)
    depth: list[int] = []  # brace depth at which each open `${` returns to its template literal
    braces = 0
    while i < n:
        found = _INTERESTING.search(source, i)
        if found is None:
            parts.append(source[i:])
            break
        at = found.start()
        parts.append(source[i:at])
        c = source[at]
        if c in "{}" and not (c == "}" and depth and depth[-1] == braces):
            braces += 1 if c == "{" else -1
            parts.append(c)
            i = at + 1
            continue
        if c == "/":
            if source.startswith("//", at):
                end = source.find("\n", at)
                end = n if end < 0 else end
            elif source.startswith("/*", at):
                end = source.find("*/", at + 2)
                end = n if end < 0 else end + 2
            else:
                parts.append(c)
                i = at + 1
                continue
            parts.append(_blanked(source[at:end]))
        elif c in "'\"":
            end = _STRING_BODY[c].match(source, at + 1).end()  # type: ignore[union-attr]
            closed = end < n and source[end] == c
            parts.append(c + _blanked(source[at + 1 : end]) + (c if closed else ""))
            end += 1 if closed else 0
        else:  # a template literal's text: after its opening backtick, or after the `}` of a `${`
            if c == "}":
                depth.pop()
            text_end, end, opened = _template_end(source, at + 1)
            if opened:
                depth.append(braces)
            parts.append(c + _blanked(source[at + 1 : text_end]) + source[text_end:end])
        i = end
    return "".join(parts)


_INTERESTING = re.compile(r"[/'\"`{}]")
_STRING_BODY = {q: re.compile(rf"[^{q}\\\n]*(?:\\[\s\S][^{q}\\\n]*)*") for q in "'\""}
_TEMPLATE_TEXT = re.compile(r"[^`\\$]*(?:(?:\\[\s\S]|\$(?!\{))[^`\\$]*)*")
_NOT_NEWLINE = re.compile(r"[^\n]+")


def _template_end(source: str, i: int) -> tuple[int, int, bool]:
    """Where a template literal's text that starts at `i` ends, and where the code goes on: after
    its closing backtick (False), or after a `${` that opens an expression (True)."""
    end = _TEMPLATE_TEXT.match(source, i).end()  # type: ignore[union-attr]
    if source.startswith("${", end):
        return end, end + 2, True
    return end, min(end + 1, len(source)), False


def _blanked(text: str) -> str:
    return _NOT_NEWLINE.sub(lambda run: " " * len(run.group()), text)
