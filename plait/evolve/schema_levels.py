"""The vocabulary of schema comparison: levels, kinds of change, findings, and the scope of a walk.

A level states what data written under the old schema can expect from the new one (reader-side
backward compatibility):

- patch: the same set of valid instances (annotations, reordering, an equivalent rewrite);
- minor: a superset (widening): every old instance still validates, some new ones too;
- major: some old instance may be refused, or the change was not proven safe.

Every rule must keep that promise: a finding is patch only when the keyword it looks at accepts
exactly the same values, minor only when it accepts at least the old ones. Keywords combine by
conjunction, so a schema whose findings are all minor accepts every value the old one did.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
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
    TYPE_WIDENED = "type_widened"
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


Findings = list[Finding]
Descend = Callable[[Any, Any, str, "Scope"], Findings]


@dataclass(frozen=True)
class Scope:
    """What a comparison of two subschemas needs to know besides them.

    `watch_props` / `watch_items`: an `unevaluatedProperties` / `unevaluatedItems` at this
    instance location looks at what this subschema evaluates, so it must not evaluate less.
    `refs`: the pairs of references being compared, so that recursive schemas end.
    """

    old_root: Any
    new_root: Any
    validates: frozenset[str]
    ref_siblings_ignored: bool
    descend: Descend
    watch_props: bool = False
    watch_items: bool = False
    refs: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    refs_stable: bool = True
    """Whether every reference points at the same schema in the old and the new document."""

    def child(self, old: Any, new: Any, path: str) -> Findings:
        """Compare the subschemas of a value inside this one (a property, an item)."""
        return self.descend(old, new, path, replace(self, watch_props=False, watch_items=False))

    def in_place(self, old: Any, new: Any, path: str) -> Findings:
        """Compare subschemas applied to this very value (allOf, anyOf, if, $ref...)."""
        return self.descend(old, new, path, self)

    def unchanged(self, old: Any, new: Any) -> bool:
        """Equal text that also means the same: a reference whose target changed does not."""
        return same(old, new) and (self.refs_stable or "$ref" not in canon(old))

    def checks(self, keyword: str) -> bool:
        """Whether the schema's draft validates `keyword` (others are ignored by validation)."""
        return keyword in self.validates


def level_of(findings: Iterable[Finding]) -> Level:
    """The most severe level of `findings`; none when there are none."""
    return max((f.level for f in findings), default=Level.NONE)


def capped(findings: Iterable[Finding], ceiling: Level, why: str) -> Findings:
    """`findings` with their level lowered to `ceiling`, saying why."""
    return [f if f.level <= ceiling else Finding(ceiling, f.path, f.kind, f"{f.message} ({why})") for f in findings]


def same(a: Any, b: Any) -> bool:
    """JSON equality: unlike `==`, `true` and `1` differ and key order does not matter."""
    return canon(a) == canon(b)


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def child_path(path: str, name: str) -> str:
    """The path of property `name` under `path`: `a.b`, or `a["odd name"]` when it is no identifier."""
    return f"{path}.{name}" if _IDENT.match(name) else f"{path}[{json.dumps(name)}]"


def type_names(schema: Any) -> frozenset[str] | None:
    """The `type` keyword as a set (a string and a one-element list are the same), None when absent."""
    if not isinstance(schema, dict) or "type" not in schema:
        return None
    value = schema["type"]
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return frozenset(value)
    return frozenset({canon(value)})


def type_text(names: frozenset[str]) -> str:
    return " or ".join(sorted(names))


def tightened(path: str, what: str) -> Finding:
    return Finding(Level.MAJOR, path, Kind.CONSTRAINT_TIGHTENED, f"{what}; existing data may no longer validate")


def loosened(path: str, what: str) -> Finding:
    return Finding(Level.MINOR, path, Kind.CONSTRAINT_LOOSENED, f"{what}; every existing value still validates")


def unanalysed(path: str, what: str) -> Finding:
    return Finding(Level.MAJOR, path, Kind.OTHER, f"{what}; not proven safe, so treated as breaking")


def as_schema(schema: Any) -> dict[str, Any] | bool | None:
    """A subschema as a dict or a boolean; None for what is no schema at all."""
    return schema if isinstance(schema, dict | bool) else None


def accepts_all(schema: Any) -> bool:
    """`true`, `{}`, or only keywords no draft validates (the annotations)."""
    if schema is True:
        return True
    return isinstance(schema, dict) and not (set(schema) & VALIDATING)


VALIDATING = {
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "additionalItems",
    "additionalProperties",
    "allOf",
    "anyOf",
    "const",
    "contains",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "if",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "not",
    "oneOf",
    "pattern",
    "patternProperties",
    "prefixItems",
    "properties",
    "propertyNames",
    "required",
    "type",
    "unevaluatedItems",
    "unevaluatedProperties",
    "uniqueItems",
}
