"""JSON Schema helpers for the compiler: validity, conflicts between edge schemas, path lookup.

The conflict check is deliberately conservative (types, enums, required vs.
closed objects, recursively through properties and items): it reports only
combinations that no value can satisfy, which is what the
engine to refuse before a run starts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any

from plait.caches import ByteBoundCache
from plait.compile.schema_validator import NO_REGISTRY, safe_class, schema_registry
from plait.compile.template_types import Segment

DEFAULT_DRAFT = "http://json-schema.org/draft-07/schema#"


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    """A reason a JSON Schema is invalid, and where inside the schema document it is."""

    path: tuple[str | int, ...]
    """Where inside the schema document the problem is."""
    message: str


def object_form(schema: Any) -> dict[str, Any]:
    """`schema` as an object schema: `true` (anything is valid) is `{}`, `false` (nothing is) is
    `{"not": {}}`; for what reads a schema's keywords (a model's response_format, conflict checks)."""
    if schema is True:
        return {}
    if schema is False:
        return {"not": {}}
    return schema if isinstance(schema, dict) else {}


def check_json_schema(schema: Any) -> list[SchemaProblem]:
    """Validate a schema against its metaschema (`$schema`, else Draft 7); `true` and `false` are schemas too."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [SchemaProblem((), f"a JSON Schema must be an object, `true` or `false`, not {type(schema).__name__}")]
    try:
        key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return [SchemaProblem((), "schema is not JSON-serialisable")]
    return list(_CHECKS.get((key,), lambda: _check(key)))


_CHECKS: ByteBoundCache[tuple[SchemaProblem, ...]] = ByteBoundCache(
    "schema checks", 16 << 20, max_entries=4096, weigh=lambda problems, _: _problems_bytes(problems)
)
"""Metaschema verdicts by the schema's text (kept as a digest when long), charged what they hold."""


def _problems_bytes(problems: tuple[SchemaProblem, ...]) -> int:
    return 256 + sum(200 + len(p.message) for p in problems)


def _check(key: str) -> tuple[SchemaProblem, ...]:
    from jsonschema import Draft7Validator, validators
    from jsonschema.exceptions import best_match

    schema = json.loads(key)
    problems: list[SchemaProblem] = []
    cls: Any = Draft7Validator
    if "$schema" in schema:
        dialect = schema["$schema"]
        unknown: Any = _UnknownDraft
        cls = validators.validator_for(schema, default=unknown) if isinstance(dialect, str) else unknown
        if cls is _UnknownDraft:
            cls = Draft7Validator
            problems.append(
                SchemaProblem(
                    ("$schema",),
                    f"unknown $schema {dialect!r}: name a JSON Schema draft by its URI, e.g. '{DEFAULT_DRAFT}' "
                    "(no other dialect is fetched)",
                )
            )
    by_path: dict[tuple[str | int, ...], list[Any]] = {}
    for error in _meta_validator(cls).iter_errors(schema):
        by_path.setdefault(tuple(error.absolute_path), []).append(error)
    for path, errors in by_path.items():  # one problem per place: the metaschema's allOf repeats itself
        problems.append(SchemaProblem(path, best_match(errors).message))
    return tuple(problems)


@cache
def _meta_validator(cls: Any) -> Any:
    """One validator of each draft's metaschema, built once (building it is the slow part); like every
    validator Plait builds, it fetches nothing and runs its patterns on RE2."""
    return safe_class(cls)(cls.META_SCHEMA, registry=schema_registry(NO_REGISTRY))


class _UnknownDraft:
    """Sentinel: `$schema` names no draft that jsonschema knows."""


def _types(schema: dict[str, Any]) -> set[str] | None:
    value = schema.get("type")
    if value is None:
        return None
    names = {value} if isinstance(value, str) else set(value) if isinstance(value, list) else set()
    if "number" in names:
        names.add("integer")
    return names


def schema_conflicts(schemas: Sequence[dict[str, Any]]) -> list[str]:
    """Pairwise conflicts between schemas that must all hold for one value."""
    found: list[str] = []
    for i in range(len(schemas)):
        for j in range(i + 1, len(schemas)):
            found.extend(_conflicts(schemas[i], schemas[j], "$"))
    return found


def _conflicts(a: Any, b: Any, where: str) -> list[str]:
    if not isinstance(a, dict) or not isinstance(b, dict):
        return []
    ta, tb = _types(a), _types(b)
    if ta is not None and tb is not None and not ta & tb:
        return [f"{where}: type {_fmt(a['type'])} vs {_fmt(b['type'])}"]
    out: list[str] = []
    va, vb = _allowed_values(a), _allowed_values(b)
    if va is not None and vb is not None and not any(x in vb for x in va):
        out.append(f"{where}: allowed values {va} and {vb} do not overlap")
    pa, pb = a.get("properties") or {}, b.get("properties") or {}
    if isinstance(pa, dict) and isinstance(pb, dict):
        for key in pa.keys() & pb.keys():
            out.extend(_conflicts(pa[key], pb[key], f"{where}.{key}"))
        out.extend(_closed_conflicts(a, pb, where))
        out.extend(_closed_conflicts(b, pa, where))
    ia, ib = a.get("items"), b.get("items")
    if isinstance(ia, dict) and isinstance(ib, dict):
        out.extend(_conflicts(ia, ib, f"{where}[]"))
    return out


def _closed_conflicts(closed: dict[str, Any], other_props: dict[str, Any], where: str) -> list[str]:
    """A required property of one schema that the other, closed schema does not allow."""
    if closed.get("additionalProperties") is not False:
        return []
    allowed = set((closed.get("properties") or {}).keys())
    return [
        f"{where}.{key}: declared by one schema, forbidden by the other (additionalProperties: false)"
        for key in other_props
        if key not in allowed
    ]


def _allowed_values(schema: dict[str, Any]) -> list[Any] | None:
    if "const" in schema:
        return [schema["const"]]
    enum = schema.get("enum")
    return list(enum) if isinstance(enum, list) else None


def _fmt(value: Any) -> str:
    return json.dumps(value)


class PathStatus(Enum):
    """Whether a schema declares a field path (`lookup_path`): yes, no, or it does not say."""

    OK = "ok"
    MISSING = "missing"
    UNKNOWN = "unknown"
    """The schema does not say (no properties, $ref, combinators...): accept."""


def lookup_path(schema: Any, segments: Sequence[Segment]) -> tuple[PathStatus, str]:
    """Walk `segments` through `schema`; on MISSING also return the part that was not found."""
    current = schema
    walked: list[str] = []
    for seg in segments:
        if not isinstance(current, dict):
            return PathStatus.UNKNOWN, ""
        if isinstance(seg, int):
            items = current.get("items")
            if not isinstance(items, dict):
                return PathStatus.UNKNOWN, ""
            current = items
            walked.append(f"[{seg}]")
            continue
        props = current.get("properties")
        if not isinstance(props, dict) or "patternProperties" in current or _open(current):
            return PathStatus.UNKNOWN, ""
        if seg not in props:
            walked.append(f".{seg}")
            return PathStatus.MISSING, "".join(walked).lstrip(".")
        current = props[seg]
        walked.append(f".{seg}")
    return PathStatus.OK, ""


def _open(schema: dict[str, Any]) -> bool:
    extra = schema.get("additionalProperties")
    return extra is True or isinstance(extra, dict)


def declared_fields(schema: Any) -> list[str]:
    """The property names a schema declares at its top level (none when it declares no `properties`)."""
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        return list(schema["properties"])
    return []


def schema_at(schema: Any, path: Sequence[Segment]) -> Any:
    """The part of `schema` that describes the value at `path`, following `properties` and
    `items` only (None: the schema does not say)."""
    for step in path:
        if not isinstance(schema, dict):
            return None
        if isinstance(step, int):
            schema = schema.get("items")
        else:
            properties = schema.get("properties")
            schema = properties.get(step) if isinstance(properties, dict) else None
    return schema
