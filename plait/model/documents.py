"""Reading the JSON and YAML documents a user hands Plait: run inputs, override values,
scripted responses, upstream outputs. One reader, so that every file gets the same limits.

A file is read only when it is a regular file (not `/dev/zero`, a FIFO or a directory), and
never more than `MAX_FILE_BYTES` + 1 bytes of it, so an endless or huge file costs nothing.
YAML is composed by a SafeLoader that stops at `MAX_DEPTH` levels (PyYAML's composer
recurses) and counts what aliases expand to before anything is built: a few hundred bytes of
nested aliases (a "billion laughs" file) would otherwise become millions of values once
serialized. Every parsed value then passes `check_value` (depth, lone surrogates, NaN and
infinities, overlong integers), and every failure is a `DocumentError` naming the file and
the path of the offending part.

Graph files have their own line-tracking parser (`plait.compile.source`) and use only the
file reading here.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from plait.errors import PlaitError, Refusal
from plait.model.limits import MAX_DEPTH, MAX_INT_DIGITS, ValueLimitError, check_value

MAX_FILE_BYTES = 10 * 1024 * 1024
"""The largest document file Plait reads (10 MiB, the HTTP API's default body limit)."""

MAX_VALUES = 100_000
"""How many values (scalars and collections) a YAML document may hold once its aliases are
expanded; counted on the composed nodes, each shared node once, never by expanding."""


class DocumentError(PlaitError, ValueError):
    """A document cannot be read or breaks a limit; the message names the file and the place.

    `code` is `unreadable`, `too_large` (then `size` is how many bytes were seen), `syntax` or
    `invalid`."""

    kind = Refusal.INVALID

    def __init__(self, message: str, hint: str | None = None, *, code: str = "invalid", size: int = 0) -> None:
        super().__init__(message, hint, code=code)
        self.size = size


def read_limited(path: str | os.PathLike[str], what: str, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file `path`; `what` names it in errors ("input file x.yaml")."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
    except OSError as exc:
        raise DocumentError(
            f"cannot read {what}: {exc.strerror or exc}", "check the path and permissions", code="unreadable"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError(
                f"{what} is not a regular file ({_kind(info.st_mode)})", "give the path of a file", code="unreadable"
            )
        if info.st_size > max_bytes:
            raise too_large(what, info.st_size, max_bytes)
        raw = _read_at_most(fd, max_bytes + 1)
    except OSError as exc:
        raise DocumentError(f"cannot read {what}: {exc.strerror}", "check the path", code="unreadable") from None
    finally:
        os.close(fd)
    if len(raw) > max_bytes:  # it grew while being read
        raise too_large(what, len(raw), max_bytes)
    return raw


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def too_large(what: str, size: int, max_bytes: int) -> DocumentError:
    """The one error for a document over its size limit, sizes in MiB (code `too_large`)."""
    return DocumentError(
        f"{what} is {size / 1048576:.1f} MiB; the limit is {max_bytes / 1048576:.1f} MiB",
        "documents hold values, not bulk data; send less",
        code="too_large",
        size=size,
    )


def decode_text(raw: bytes, what: str) -> str:
    """UTF-8 text (a leading BOM dropped); a binary file is refused with the offending byte."""
    skip = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + skip
        raise DocumentError(
            f"{what} is not UTF-8 text (byte 0x{raw[offset]:02x} at offset {offset})",
            "give a JSON or YAML text file saved as UTF-8",
        ) from None


def read_document(path: str | os.PathLike[str], what: str, root: str) -> Any:
    """Read, parse (JSON for `.json`, else YAML) and check the document at `path`.

    `root` names the value in paths of errors: `input.a.b[2]: ...`."""
    text = decode_text(read_limited(path, what), what)
    return parse_document(text, what, root, as_json=Path(path).suffix.lower() == ".json")


def parse_document(text: str, what: str, root: str, *, as_json: bool) -> Any:
    """Parse `text` as JSON or YAML under every limit; raise DocumentError naming `what`."""
    data = parse_json(text, what) if as_json else parse_yaml(text, what)
    check_document(data, what, root)
    return data


def check_document(data: Any, what: str, root: str) -> None:
    """`check_value` with the error a document reader gives."""
    try:
        check_value(data, root)
    except ValueLimitError as exc:
        raise DocumentError(f"{what}: {exc}", _hint(exc)) from None


def parse_json(text: str, what: str) -> Any:
    """Strict JSON: NaN and Infinity are not JSON; nesting past the interpreter's depth and
    integers past its digit limit are errors, not crashes. The value still needs `check_value`."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise DocumentError(
            f"{what} is not valid JSON: {exc}", "fix the JSON syntax at that position", code="syntax"
        ) from None
    except _NotJson as exc:
        raise DocumentError(
            f"{what} is not valid JSON: {exc}", "write a finite number, or a string", code="syntax"
        ) from None
    except RecursionError:
        raise DocumentError(
            f"{what} is nested deeper than the limit of {MAX_DEPTH} levels", "flatten the structure"
        ) from None
    except ValueError as exc:  # an integer longer than Python converts, a NaN
        raise _value_error(exc, what, "JSON") from None


def json_or_text(raw: str, what: str) -> Any:
    """A command-line value (`-i key=VALUE`): its strict JSON value when it is JSON, else the
    text itself (`-i n=NaN` is the string "NaN"). JSON too deep or with an overlong integer is
    an error, not text: the user wrote JSON and would not expect a string back."""
    try:
        return parse_json(raw, what)
    except DocumentError as exc:
        if exc.code == "syntax":
            return raw
        raise


def parse_yaml(text: str, what: str) -> Any:
    """YAML through `_BoundedLoader`: dates stay strings and non-string keys become their JSON text."""
    loader = _BoundedLoader(text, what)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, what)
        return loader.construct_document(node)
    except DocumentError:
        raise
    except yaml.YAMLError as exc:
        raise DocumentError(f"{what} is not valid YAML: {exc}", "fix the YAML syntax at that position") from None
    except RecursionError:
        raise DocumentError(f"{what} is nested deeper than the limit of {MAX_DEPTH} levels", "flatten it") from None
    except ValueError as exc:  # an integer longer than Python converts
        raise _value_error(exc, what, "YAML") from None
    finally:
        loader.dispose()


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader whose composer refuses documents nested deeper than `MAX_DEPTH`."""

    def __init__(self, stream: str, what: str) -> None:
        super().__init__(stream)
        self._what = what
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:  # the root is depth 0, like check_value's
                line = self.peek_event().start_mark.line + 1  # type: ignore[no-untyped-call]
                raise DocumentError(
                    f"{self._what} is nested deeper than the limit of {MAX_DEPTH} levels (line {line})",
                    "flatten the structure",
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep)
        if all(isinstance(key, str) for key in mapping):
            return mapping
        return {key if isinstance(key, str) else json.dumps(key, default=str): value for key, value in mapping.items()}


# YAML 1.1 turns `2024-05-01` into a date, which is not a JSON value: keep the text.
_BoundedLoader.add_constructor(
    "tag:yaml.org,2002:timestamp",
    lambda loader, node: loader.construct_scalar(node),  # type: ignore[arg-type]
)


def _check_expansion(root: yaml.Node, what: str) -> None:
    """Refuse a document whose aliases expand past `MAX_VALUES` values, or refer to themselves.

    Post-order over the composed graph, each node counted once (memoised by id): the size of a
    collection is one plus the sizes of its children, aliases included as often as they occur."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children = _children(node)
        if done:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in children)
            if size > MAX_VALUES:
                raise DocumentError(
                    f"{what} expands to more than {MAX_VALUES:,} values (line {node.start_mark.line + 1})",
                    "aliases (*name) repeat what they name; write the values out, or send fewer",
                )
            sizes[key] = size
            continue
        if key in open_nodes:
            raise DocumentError(
                f"{what} holds an alias inside the value it names (line {node.start_mark.line + 1})",
                "a value cannot contain itself; remove the alias",
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _value_error(exc: ValueError, what: str, syntax: str) -> DocumentError:
    if "integer string conversion" in str(exc):
        return DocumentError(
            f"{what} holds an integer with more than {MAX_INT_DIGITS} digits", "send such a number as a string"
        )
    return DocumentError(f"{what} is not valid {syntax}: {exc}", "fix the value")


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number (JSON has no NaN or Infinity)")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _hint(exc: ValueLimitError) -> str:
    message = exc.problem.message
    if "nested deeper" in message:
        return "flatten the structure"
    if "surrogate" in message:
        return "write real characters (UTF-8 text, or a surrogate pair in JSON escapes)"
    return "change that value"
