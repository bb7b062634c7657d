"""Walks an old and a new JSON Schema side by side and lists each change with its semver level.

The levels follow what existing stored data and existing consumers can survive. Removing,
retyping or renaming a property, narrowing an enum or tightening a constraint can make stored
data invalid → major. A new required property or a widened enum asks more of producers or
consumers, but old data keeps its meaning → minor. New optional properties, documentation and
loosened constraints → patch. Keywords not analysed here are compared verbatim and any difference
is major (kind `other`): an unknown change is never reported as safe.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Level(StrEnum):
    """Semver level of a change, ordered none < patch < minor < major (not alphabetically)."""

    NONE = "none"
    PATCH = "patch"
    MINOR = "minor"
    MAJOR = "major"

    @property
    def rank(self) -> int:
        return _RANKS[self.value]

    def __lt__(self, other: object) -> bool:
        return self.rank < other.rank if isinstance(other, Level) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.rank <= other.rank if isinstance(other, Level) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.rank > other.rank if isinstance(other, Level) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.rank >= other.rank if isinstance(other, Level) else NotImplemented


_RANKS = {"none": 0, "patch": 1, "minor": 2, "major": 3}


class Kind(StrEnum):
    """What changed; stable strings so that callers and tests can match on them."""

    ADDED_OPTIONAL = "added_optional"
    ADDED_REQUIRED = "added_required"
    BECAME_REQUIRED = "became_required"
    BECAME_OPTIONAL = "became_optional"
    REMOVED = "removed"
    RENAME = "rename"
    TYPE_CHANGED = "type_changed"
    ENUM_NARROWED = "enum_narrowed"
    ENUM_WIDENED = "enum_widened"
    ENUM_ADDED = "enum_added"
    ENUM_REMOVED = "enum_removed"
    CONSTRAINT_TIGHTENED = "constraint_tightened"
    CONSTRAINT_LOOSENED = "constraint_loosened"
    DESCRIPTION = "description"
    TITLE = "title"
    ANNOTATION = "annotation"
    COSMETIC = "cosmetic"
    SCHEMA_ADDED = "schema_added"
    SCHEMA_REMOVED = "schema_removed"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Finding:
    """One change: `path` is a JSON path into the data (`$.chapters[].title`), not into the schema."""

    level: Level
    path: str
    kind: Kind
    message: str

    def __str__(self) -> str:
        return f"{self.level} {self.path}: {self.message}"


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DRAFT7 = "http://json-schema.org/draft-07/schema"
_UPPER_BOUNDS = ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum")
_LOWER_BOUNDS = ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum")
_PATTERNS = ("pattern", "format")
_ANNOTATIONS = {
    "description": Kind.DESCRIPTION,
    "title": Kind.TITLE,
    "$comment": Kind.ANNOTATION,
    "examples": Kind.ANNOTATION,
    "default": Kind.ANNOTATION,
    "readOnly": Kind.ANNOTATION,
    "writeOnly": Kind.ANNOTATION,
    "deprecated": Kind.ANNOTATION,
}
_HANDLED = {
    *_UPPER_BOUNDS,
    *_LOWER_BOUNDS,
    *_PATTERNS,
    *_ANNOTATIONS,
    "$schema",
    "type",
    "enum",
    "properties",
    "required",
    "items",
    "additionalProperties",
    "multipleOf",
    "uniqueItems",
}


def diff_schemas(old: Any, new: Any) -> list[Finding]:
    """All findings between two schemas, in document order; empty when nothing that validates changed."""
    out: list[Finding] = []
    _node(old, new, "$", out)
    return out


def same(a: Any, b: Any) -> bool:
    """JSON equality: unlike `==`, `true` and `1` differ and key order does not matter."""
    return _canon(a) == _canon(b)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."


def child_path(path: str, name: str) -> str:
    """The path of property `name` under `path`: `a.b`, or `a["odd name"]` when it is no identifier."""
    return f"{path}.{name}" if _IDENT.match(name) else f"{path}[{json.dumps(name)}]"


def _node(old: Any, new: Any, path: str, out: list[Finding]) -> None:
    if same(old, new):
        return
    old, new = _as_object(old), _as_object(new)
    if old is None or new is None:
        out.append(Finding(Level.MAJOR, path, Kind.OTHER, "schema changed, not analysed"))
        return
    disjoint = _types(old, new, path, out)
    _annotations(old, new, path, out)
    if disjoint:  # the rest of the old schema describes values that can no longer occur
        return
    _enum(old.get("enum"), new.get("enum"), path, out)
    _constraints(old, new, path, out)
    _object(old, new, path, out)
    _items(old.get("items"), new.get("items"), path, out)
    _additional(old.get("additionalProperties"), new.get("additionalProperties"), path, out)
    _others(old, new, path, out)


def _as_object(schema: Any) -> dict[str, Any] | None:
    """Draft 7 boolean schemas: `true` accepts everything, like `{}`; `false` stays unanalysable."""
    if schema is True:
        return {}
    return schema if isinstance(schema, dict) else None


def type_names(schema: Any) -> frozenset[str] | None:
    """The `type` keyword as a set (a string and a one-element list are the same), None when absent."""
    if not isinstance(schema, dict) or "type" not in schema:
        return None
    value = schema["type"]
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    return frozenset({_canon(value)})


def _type_text(names: frozenset[str]) -> str:
    return " or ".join(sorted(names))


def _types(old: dict[str, Any], new: dict[str, Any], path: str, out: list[Finding]) -> bool:
    """Reports a type change; True when no value of the old type can be of the new one."""
    before, after = type_names(old), type_names(new)
    if before == after:
        return False
    if before is None:
        assert after is not None
        message = f"type restricted to {_type_text(after)}; existing data of other types no longer validates"
    elif after is None:
        message = f"type constraint {_type_text(before)} removed; consumers must handle values of any type"
    else:
        message = f"type changed from {_type_text(before)} to {_type_text(after)}"
    out.append(Finding(Level.MAJOR, path, Kind.TYPE_CHANGED, message))
    if before is None or after is None:
        return False
    widen = {"number": {"integer"}}
    expand = {n for name in before for n in (name, *widen.get(name, ()))}
    return not expand & {n for name in after for n in (name, *widen.get(name, ()))}


def _annotations(old: dict[str, Any], new: dict[str, Any], path: str, out: list[Finding]) -> None:
    for key, kind in _ANNOTATIONS.items():
        a, b = old.get(key), new.get(key)
        if same(a, b):
            continue
        verb = "added" if a is None else "removed" if b is None else "changed"
        out.append(Finding(Level.PATCH, path, kind, f"{key} {verb}"))


def _enum(old: Any, new: Any, path: str, out: list[Finding]) -> None:
    if same(old, new):
        return
    if old is None:
        message = f"values restricted to {_show(new)}; existing data with other values no longer validates"
        out.append(Finding(Level.MAJOR, path, Kind.ENUM_ADDED, message))
        return
    if new is None:
        message = f"enum {_show(old)} removed; consumers must handle any value"
        out.append(Finding(Level.MINOR, path, Kind.ENUM_REMOVED, message))
        return
    if not isinstance(old, list) or not isinstance(new, list):
        out.append(Finding(Level.MAJOR, path, Kind.OTHER, "enum changed, not analysed"))
        return
    old_keys, new_keys = {_canon(v) for v in old}, {_canon(v) for v in new}
    removed = [v for v in old if _canon(v) not in new_keys]
    added = [v for v in new if _canon(v) not in old_keys]
    if removed:
        message = f"enum narrowed, values removed: {_show(removed)}; existing data with them no longer validates"
        out.append(Finding(Level.MAJOR, path, Kind.ENUM_NARROWED, message))
    if added:
        message = f"enum widened, values added: {_show(added)}; consumers must handle the new values"
        out.append(Finding(Level.MINOR, path, Kind.ENUM_WIDENED, message))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _constraints(old: dict[str, Any], new: dict[str, Any], path: str, out: list[Finding]) -> None:
    for key in (*_UPPER_BOUNDS, *_LOWER_BOUNDS):
        _bound(key, old.get(key), new.get(key), key in _UPPER_BOUNDS, path, out)
    _multiple_of(old.get("multipleOf"), new.get("multipleOf"), path, out)
    a, b = bool(old.get("uniqueItems")), bool(new.get("uniqueItems"))
    if a != b:
        out.append(_tightened(path, "uniqueItems added") if b else _loosened(path, "uniqueItems removed"))
    for key in _PATTERNS:
        a_text, b_text = old.get(key), new.get(key)
        if same(a_text, b_text):
            continue
        if a_text is None:
            out.append(_tightened(path, f"new {key} {_show(b_text)}"))
        elif b_text is None:
            out.append(_loosened(path, f"{key} {_show(a_text)} removed"))
        else:
            out.append(_tightened(path, f"{key} changed from {_show(a_text)} to {_show(b_text)}"))


def _tightened(path: str, what: str) -> Finding:
    message = f"{what}; existing data may no longer validate"
    return Finding(Level.MAJOR, path, Kind.CONSTRAINT_TIGHTENED, message)


def _loosened(path: str, what: str) -> Finding:
    return Finding(Level.PATCH, path, Kind.CONSTRAINT_LOOSENED, what)


def _bound(key: str, a: Any, b: Any, upper: bool, path: str, out: list[Finding]) -> None:
    if same(a, b) or (_is_number(a) and _is_number(b) and a == b):
        return
    if a is None:
        out.append(_tightened(path, f"new constraint {key}={_show(b)}"))
    elif b is None:
        out.append(_loosened(path, f"constraint {key}={_show(a)} removed"))
    elif not (_is_number(a) and _is_number(b)):
        out.append(Finding(Level.MAJOR, path, Kind.OTHER, f"{key} changed from {_show(a)} to {_show(b)}"))
    elif (b < a) if upper else (b > a):
        out.append(_tightened(path, f"{key} tightened from {a} to {b}"))
    else:
        out.append(_loosened(path, f"{key} loosened from {a} to {b}"))


def _multiple_of(a: Any, b: Any, path: str, out: list[Finding]) -> None:
    if same(a, b):
        return
    if a is None:
        out.append(_tightened(path, f"new constraint multipleOf={_show(b)}"))
    elif b is None:
        out.append(_loosened(path, f"constraint multipleOf={_show(a)} removed"))
    elif _is_number(a) and _is_number(b) and a and b and float(a / b).is_integer():
        out.append(_loosened(path, f"multipleOf loosened from {a} to {b}"))  # every multiple of a is one of b
    else:
        out.append(_tightened(path, f"multipleOf changed from {_show(a)} to {_show(b)}"))


def _object(old: dict[str, Any], new: dict[str, Any], path: str, out: list[Finding]) -> None:
    old_props, new_props = old.get("properties", {}), new.get("properties", {})
    old_req, new_req = old.get("required", []), new.get("required", [])
    if not all(isinstance(v, dict) for v in (old_props, new_props)) or not all(
        isinstance(v, list) for v in (old_req, new_req)
    ):
        if not same(old_props, new_props) or not same(old_req, new_req):
            out.append(Finding(Level.MAJOR, path, Kind.OTHER, "properties or required changed, not analysed"))
        return
    old_req, new_req = [str(n) for n in old_req], [str(n) for n in new_req]
    was_required, is_required = set(old_req), set(new_req)
    removed = [name for name in old_props if name not in new_props]
    added = [name for name in new_props if name not in old_props]
    renames = pair_renames(old_props, new_props, removed, added)
    for old_name, new_name in renames.items():
        kind = _rename_type(old_props[old_name], new_props[new_name])
        message = (
            f"property '{old_name}' removed and '{new_name}' added with the same type ({kind}): "
            f"probable rename of '{old_name}' to '{new_name}'; existing data still has '{old_name}'"
        )
        out.append(Finding(Level.MAJOR, child_path(path, old_name), Kind.RENAME, message))
    for name in removed:
        if name not in renames:
            message = f"property '{name}' removed; existing data and consumers that read it break"
            out.append(Finding(Level.MAJOR, child_path(path, name), Kind.REMOVED, message))
    paired = set(renames.values())
    for name in added:
        if name in paired:
            continue
        if name in is_required:
            message = f"required property '{name}' added; producers must now supply it"
            out.append(Finding(Level.MINOR, child_path(path, name), Kind.ADDED_REQUIRED, message))
        else:
            out.append(
                Finding(Level.PATCH, child_path(path, name), Kind.ADDED_OPTIONAL, f"optional property '{name}' added")
            )
    undeclared = [n for n in [*old_req, *new_req] if n not in old_props and n not in new_props]
    for name in [*(n for n in new_props if n in old_props), *dict.fromkeys(undeclared)]:
        if name in is_required and name not in was_required:
            message = f"property '{name}' is now required; existing data without it no longer validates"
            out.append(Finding(Level.MINOR, child_path(path, name), Kind.BECAME_REQUIRED, message))
        elif name in was_required and name not in is_required:
            message = f"property '{name}' is no longer required; consumers must handle its absence"
            out.append(Finding(Level.MINOR, child_path(path, name), Kind.BECAME_OPTIONAL, message))
        if name in old_props and name in new_props:
            _node(old_props[name], new_props[name], child_path(path, name), out)


def rename_key(schema: Any) -> str | None:
    """The 'type' a rename must preserve: `type`, else object/array from the keywords, else unknown."""
    names = type_names(schema)
    if names is not None:
        return _type_text(names)
    if isinstance(schema, dict):
        if "properties" in schema:
            return "object"
        if "items" in schema:
            return "array"
    return None


def _rename_type(old: Any, new: Any) -> str:
    return rename_key(old) or rename_key(new) or "any"


def _strip_docs(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_docs(v) for k, v in schema.items() if k not in ("description", "title", "$comment")}
    if isinstance(schema, list):
        return [_strip_docs(v) for v in schema]
    return schema


def pair_renames(
    old_props: dict[str, Any], new_props: dict[str, Any], removed: list[str], added: list[str]
) -> dict[str, str]:
    """Removed → added property pairs that look like renames: identical schemas first, then same type."""
    pairs: dict[str, str] = {}
    free = list(added)
    for exact in (True, False):
        for old_name in removed:
            if old_name in pairs:
                continue
            key = rename_key(old_props[old_name])
            for new_name in free:
                if exact:
                    match = same(_strip_docs(old_props[old_name]), _strip_docs(new_props[new_name]))
                else:
                    match = key is not None and key == rename_key(new_props[new_name])
                if match:
                    pairs[old_name] = new_name
                    free.remove(new_name)
                    break
    return {name: pairs[name] for name in removed if name in pairs}


def _items(old: Any, new: Any, path: str, out: list[Finding]) -> None:
    if same(old, new):
        return
    old = {} if old is None else old
    new = {} if new is None else new
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            _node(a, b, f"{path}[{index}]", out)
    elif isinstance(old, list) or isinstance(new, list):
        out.append(Finding(Level.MAJOR, path, Kind.OTHER, "tuple items changed, not analysed"))
    else:
        _node(old, new, f"{path}[]", out)


def _additional(old: Any, new: Any, path: str, out: list[Finding]) -> None:
    old = {} if old is None or old is True else old
    new = {} if new is None or new is True else new
    if same(old, new):
        return
    if old is False and isinstance(new, dict):
        out.append(_loosened(path, "additional properties are now allowed"))
    elif isinstance(old, dict) and new is False:
        out.append(_tightened(path, "additional properties are no longer allowed"))
    else:
        _node(old, new, f"{path}.*", out)


def _others(old: dict[str, Any], new: dict[str, Any], path: str, out: list[Finding]) -> None:
    if _schema_uri(old.get("$schema")) != _schema_uri(new.get("$schema")):
        out.append(Finding(Level.MAJOR, path, Kind.OTHER, "$schema changed; validation rules may differ"))
    for key in dict.fromkeys([*old, *new]):
        if key not in _HANDLED and not same(old.get(key), new.get(key)):
            message = f"'{key}' changed; not analysed, so treated as breaking"
            out.append(Finding(Level.MAJOR, path, Kind.OTHER, message))


def _schema_uri(value: Any) -> Any:
    """An absent `$schema` means Draft 7 here (`plait.compile.schemas`); the trailing `#` is optional."""
    if value is None:
        return _DRAFT7
    return value.rstrip("#") if isinstance(value, str) else value
