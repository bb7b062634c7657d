"""Turn the bytes of a graph file into plain data plus a map of where each value is.

YAML is built from libyaml's event stream with an explicit stack rather than
PyYAML's recursive constructor, so that we can (a) remember the line of every
key and item, (b) refuse duplicate keys instead of silently keeping the last,
(c) bound nesting depth and alias expansion (billion laughs) without ever
hitting Python's recursion limit. JSON values come from the `json` module
(exact JSON semantics); their positions come from the same event walk, since
JSON is almost a subset of YAML's flow syntax (where libyaml cannot read valid
JSON, e.g. surrogate-pair escapes, the file loads without line numbers).
"""

from __future__ import annotations

import codecs
import json
import os
import pathlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

from plait.compile.diagnostics import Category, Diagnostic, GraphLoadError
from plait.model.documents import DocumentError, read_limited
from plait.model.limits import MAX_DEPTH as MAX_DEPTH  # re-exported: graph files nest no deeper than any value
from plait.model.limits import value_problem

Path_ = tuple[str | int, ...]

MAX_NODES = 1_000_000
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
MAX_BYTES_ENV = "PLAIT_MAX_GRAPH_BYTES"

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_C_LOADER = _Loader is not yaml.SafeLoader
_resolver = yaml.resolver.Resolver()
_constructor = yaml.constructor.SafeConstructor()
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


@dataclass
class SourceDoc:
    """Parsed file content: `data` plus `lines[path] -> 1-based line` for every key and item."""

    data: Any
    file: str | None = None
    lines: dict[Path_, int] = field(default_factory=dict)
    folder: str | None = None
    """Where graph and skill files named by content without a `file` are found: a trusted
    caller's choice (the Python builder passes its working directory). None, the default for
    uploads, models' drafts and stored documents: no file they name is read."""

    def files_folder(self) -> pathlib.Path | None:
        """The folder the files this document names are read from, or None: it reads none."""
        if self.file:
            return pathlib.Path(self.file).parent
        return pathlib.Path(self.folder) if self.folder else None

    def line_of(self, path: Path_) -> int | None:
        """Line of `path`, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(path[:end])
            if line is not None:
                return line
        return None


def max_graph_bytes() -> int:
    """The largest graph file read: `PLAIT_MAX_GRAPH_BYTES` when it is a whole number, else 4 MiB."""
    raw = os.environ.get(MAX_BYTES_ENV)
    return int(raw) if raw and raw.isdigit() else DEFAULT_MAX_BYTES


def read_source(path: str | os.PathLike[str]) -> SourceDoc:
    """Read and parse a `.yaml`/`.yml`/`.json` graph file; raise GraphLoadError with positions."""
    file = str(path)
    limit = max_graph_bytes()
    try:
        raw = read_limited(path, "graph file", max_bytes=limit)  # a regular file, at most limit + 1 bytes read
    except DocumentError as exc:
        if exc.code == "too_large":
            raise _fail(
                file,
                None,
                "too_large",
                f"graph file is {exc.size / 1048576:.1f} MiB; the limit is {limit / 1048576:.1f} MiB",
                f"graph files hold definitions, not data; split it or raise {MAX_BYTES_ENV}",
            ) from None
        raise _fail(file, None, "unreadable", exc.message, exc.hint or "check the path") from None
    return parse_source(raw, file=file, as_json=file.lower().endswith(".json"))


def parse_source(raw: bytes | str, *, file: str | None = None, as_json: bool = False) -> SourceDoc:
    """Parse graph-file content (YAML, or JSON with `as_json`) into data and the line of every key
    and item; GraphLoadError, positioned, for bad bytes or syntax, a duplicate key, excessive
    nesting or a value that cannot be stored."""
    text = raw if isinstance(raw, str) else _decode(raw, file)
    if not as_json:
        data, lines = _parse_yaml_events(text, file)
        return check_values(SourceDoc(data=data, file=file, lines=lines))
    # JSON: the json module decides validity and values (and words its own syntax errors);
    # the event walk then only supplies positions.
    try:
        data = _parse_json(text, file)
    except GraphLoadError as exc:
        if exc.diagnostics[0].code in ("duplicate_key", "too_deep"):
            _same_problem_with_line(text, file, exc.diagnostics[0].code)
        raise
    try:
        _, lines = _parse_yaml_events(text, file)
    except GraphLoadError as exc:
        if exc.diagnostics[0].code != "parse_error":
            raise
        if not _is_unicode(data):
            raise _fail(
                file,
                exc.diagnostics[0].line,
                "parse_error",
                "invalid JSON: a string holds a lone surrogate escape (\\ud800-\\udfff without its pair)",
                "escape characters outside the BMP as a surrogate pair, or write them as UTF-8",
            ) from None
        # Valid JSON that libyaml cannot read (surrogate-pair escapes such as "\\ud83d\\ude00", raw
        # control characters in strings): the values are exact, only the line numbers are lost.
        lines = {(): 1}
    return check_values(SourceDoc(data=data, file=file, lines=lines))


def check_values(doc: SourceDoc) -> SourceDoc:
    """`doc`, when every value in it can be stored and served (no lone surrogate, NaN or
    infinity, nothing too deep); else a GraphLoadError naming the path and its line."""
    problem = value_problem(doc.data)
    if problem is None:
        return doc
    raise _fail(
        doc.file,
        doc.line_of(problem.path),
        "invalid_value",
        problem.describe(""),
        "graph values must be JSON: real characters (no lone surrogate escapes), finite numbers",
    )


def _is_unicode(data: Any) -> bool:
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _same_problem_with_line(text: str, file: str | None, code: str) -> None:
    """Re-find a JSON duplicate key or excess depth with the event walk, which knows lines; raise that."""
    try:
        _parse_yaml_events(text, file)
    except GraphLoadError as exc:
        if exc.diagnostics[0].code == code:
            raise exc from None


def _decode(raw: bytes, file: str | None) -> str:
    skip = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + skip  # the error's offset is relative to the part after the BOM
        line = raw.count(b"\n", 0, offset) + 1
        raise _fail(
            file,
            line,
            "encoding",
            f"file is not valid UTF-8 (byte 0x{raw[offset]:02x} at offset {offset})",
            "save the file as UTF-8",
        ) from None


class _DuplicateKeyError(ValueError):
    pass


def _parse_json(text: str, file: str | None) -> Any:
    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise _DuplicateKeyError(f"duplicate key {key!r}")
            out[key] = value
        return out

    try:
        return json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise _fail(
            file,
            exc.lineno,
            "parse_error",
            f"invalid JSON: {exc.msg} (column {exc.colno})",
            "fix the JSON syntax at that position",
        ) from None
    except _DuplicateKeyError as exc:  # parse_source looks for its line with the event walk
        raise _fail(file, None, "duplicate_key", str(exc), "each key may appear once per object") from None
    except RecursionError:
        raise _fail(
            file,
            None,
            "too_deep",
            f"nesting is deeper than {MAX_DEPTH} levels",
            "flatten the structure; graph files never need this depth",
        ) from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise _fail(file, None, "parse_error", f"invalid JSON: {exc}", "fix the value") from None


_MERGE_KEY = "\x00<<"
"""Stands for a plain `<<` key (YAML merge) until its mapping is complete."""


def _apply_merge(frame: _Frame, lines: dict[Path_, int], file: str | None) -> None:
    """`<<: *base` / `<<: [*a, *b]`: copy keys the mapping does not set itself; earlier sources win."""
    assert isinstance(frame.value, dict)
    sources = frame.value.pop(_MERGE_KEY)
    line = lines.pop((*frame.path, _MERGE_KEY), None)
    for source in sources if isinstance(sources, list) else [sources]:
        if not isinstance(source, dict):
            raise _fail(
                file,
                line,
                "parse_error",
                "a merge key (<<) needs a mapping or a list of mappings",
                "write `<<: *anchor` where the anchor names a mapping",
            )
        for key, value in source.items():
            if key not in frame.value:
                frame.value[key] = value
                if line is not None:
                    lines[(*frame.path, key)] = line


class _Frame:
    """One open collection while walking the event stream."""

    __slots__ = ("anchor", "path", "pending_key", "start_count", "value")

    def __init__(self, value: dict[str, Any] | list[Any], path: Path_, anchor: str | None, start_count: int):
        self.value = value
        self.path = path
        self.pending_key: str | None = None
        self.anchor = anchor
        self.start_count = start_count


def _parse_yaml_events(text: str, file: str | None) -> tuple[Any, dict[Path_, int]]:
    lines: dict[Path_, int] = {(): 1}
    anchors: dict[str, tuple[Any, int]] = {}
    stack: list[_Frame] = []
    root: list[Any] = []
    documents = 0
    count = 0

    def place(value: Any, line: int) -> Path_ | None:
        """Attach a finished value to the open collection; return its path (None for a mapping key)."""
        if not stack:
            root.append(value)
            return ()
        top = stack[-1]
        if isinstance(top.value, list):
            path = (*top.path, len(top.value))
            top.value.append(value)
            lines[path] = line
            return path
        if top.pending_key is None:
            key = value if isinstance(value, str) else _key_text(value)
            if key in top.value:
                raise _fail(
                    file,
                    line,
                    "duplicate_key",
                    f"duplicate key {key!r}",
                    "each key may appear once per mapping; remove or rename one",
                )
            top.pending_key = key
            lines[(*top.path, key)] = line
            return None
        path = (*top.path, top.pending_key)
        top.value[top.pending_key] = value
        top.pending_key = None
        return path

    def child_path() -> Path_:
        if not stack:
            return ()
        top = stack[-1]
        if isinstance(top.value, list):
            return (*top.path, len(top.value))
        return (*top.path, top.pending_key if top.pending_key is not None else "?")

    try:
        for event in yaml.parse(text, Loader=_Loader):
            line = event.start_mark.line + 1 if event.start_mark else 0
            if isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise _fail(
                        file,
                        line,
                        "parse_error",
                        "file holds more than one YAML document",
                        "keep one graph per file; remove the extra '---'",
                    )
            elif isinstance(event, yaml.ScalarEvent):
                count += 1
                is_key = bool(stack) and isinstance(stack[-1].value, dict) and stack[-1].pending_key is None
                value = _MERGE_KEY if is_key and event.implicit[0] and event.value == "<<" else _scalar(event, is_key)
                place(value, line)
                if event.anchor:
                    anchors[event.anchor] = (value, 1)
            elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                count += 1
                if len(stack) >= MAX_DEPTH:
                    raise _fail(
                        file,
                        line,
                        "too_deep",
                        f"nesting is deeper than {MAX_DEPTH} levels",
                        "flatten the structure; graph files never need this depth",
                    )
                if stack and isinstance(stack[-1].value, dict) and stack[-1].pending_key is None:
                    raise _fail(
                        file,
                        line,
                        "parse_error",
                        "a mapping key must be a plain value, not a collection",
                        "use a string key",
                    )
                path = child_path()
                lines.setdefault(path, line)
                container: dict[str, Any] | list[Any] = {} if isinstance(event, yaml.MappingStartEvent) else []
                stack.append(_Frame(container, path, event.anchor, count))
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                frame = stack.pop()
                if isinstance(frame.value, dict) and _MERGE_KEY in frame.value:
                    _apply_merge(frame, lines, file)
                start_line = lines.get(frame.path, line)
                placed = place(frame.value, start_line)
                if placed == () and frame.path == ():
                    lines[()] = start_line
                if frame.anchor:
                    anchors[frame.anchor] = (frame.value, count - frame.start_count + 1)
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchors:
                    raise _fail(file, line, "parse_error", f"unknown alias *{event.anchor}", "define the anchor first")
                value, size = anchors[event.anchor]
                count += size
                place(value, line)
            if count > MAX_NODES:
                raise _fail(
                    file,
                    line,
                    "too_large",
                    f"document expands to more than {MAX_NODES:,} values",
                    "aliases multiply content; remove the alias chain",
                )
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        err_line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "syntax error"
        column = f" (column {mark.column + 1})" if mark else ""
        if "maximum nesting depth" in problem:  # libyaml's own limit, met first in flow collections
            raise _fail(
                file,
                err_line,
                "too_deep",
                f"nesting is deeper than {MAX_DEPTH} levels",
                "flatten the structure; graph files never need this depth",
            ) from None
        opened = exc.context_mark if exc.problem and exc.context else None
        if opened is not None and "end of stream" in problem:
            # an unclosed quote: libyaml notices at the end of the file; point where it began
            err_line = opened.line + 1
            column = f" ({exc.context}, which began at column {opened.column + 1})"
        elif opened is not None and opened.line + 1 != err_line:
            column += f", {exc.context} from line {opened.line + 1}"
        raise _fail(
            file,
            err_line,
            "parse_error",
            f"invalid YAML: {problem}{column}",
            "fix the YAML syntax at that position (check indentation and quoting)",
        ) from None
    except yaml.reader.ReaderError as exc:
        # libyaml reports a byte offset into the UTF-8 text, the pure-Python reader a character index
        before = text.encode("utf-8")[: exc.position] if _C_LOADER else text[: exc.position].encode("utf-8")
        raise _fail(
            file,
            before.count(b"\n") + 1,
            "parse_error",
            f"invalid YAML: character U+{exc.character:04X} is not allowed ({exc.reason})",
            "remove the control character, or write it as an escape inside double quotes",
        ) from None
    except yaml.YAMLError as exc:
        raise _fail(file, None, "parse_error", f"invalid YAML: {exc}", "fix the YAML syntax") from None
    return (root[0] if root else None), lines


def _scalar(event: yaml.ScalarEvent, is_key: bool) -> Any:
    if is_key:
        return event.value
    if event.tag is None or event.tag == "!":
        # plain scalars need YAML 1.1 resolution (`yes`, `1.5`, `null`); quoted and block ones are strings
        return _plain(event.value) if event.implicit[0] else event.value
    return _tagged(event.tag, event.value)


_SHORT_SCALAR = 64
"""Plain scalars up to this length are cached (16,384 of them hold at most a few megabytes)."""


def _plain(value: str) -> Any:
    """Resolved value of a plain scalar; short ones cached because graph files repeat `type:
    LLM_CALL` and friends (a long one is not: the cache would keep the text)."""
    return _plain_short(value) if len(value) <= _SHORT_SCALAR else _resolved(value)


@lru_cache(maxsize=16384)
def _plain_short(value: str) -> Any:
    return _resolved(value)


def _resolved(value: str) -> Any:
    tag = _resolver.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return _tagged(tag, value)


def _tagged(tag: str, value: str) -> Any:
    if tag == _TIMESTAMP_TAG or not tag.startswith("tag:yaml.org,2002:"):
        return value  # dates stay strings; unknown local tags are not executed
    try:
        return _constructor.construct_object(yaml.ScalarNode(tag, value), deep=True)
    except (yaml.constructor.ConstructorError, ValueError, KeyError, IndexError):
        # also `!!int x`, `!!bool maybe`, `!!float ''`, ints past Python's 4300-digit limit: keep the text
        return value


def _key_text(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


def _fail(file: str | None, line: int | None, code: str, message: str, hint: str) -> GraphLoadError:
    return GraphLoadError([Diagnostic(Category.CONFIG, code, message, file=file, line=line, hint=hint)])
