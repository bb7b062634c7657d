"""Walks an old and a new JSON Schema side by side and lists each change with its semver level.

The levels say what data written under the old schema can expect (reader-side backward
compatibility, `plait.evolve.schema_levels`): patch keeps the same valid values, minor accepts
every old value and more, major may refuse some old value. What cannot be proven safe is major:
an unknown change is never reported as safe. Keywords are read as the schema's draft reads them
(`$schema`, Draft 7 when absent): a keyword that draft does not validate is an annotation.

The keyword families live in `diff_scalars`, `diff_arrays`, `diff_objects` and `diff_logic`;
`tests/evolve/compat_oracle.py` checks the verdicts against generated data.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from typing import Any

from plait.compile.schema_validator import NO_REGISTRY, draft_of, violations
from plait.evolve.diff_arrays import arrays
from plait.evolve.diff_logic import logic, resolve
from plait.evolve.diff_objects import objects, pair_renames, rename_key
from plait.evolve.diff_scalars import numbers, strings, values
from plait.evolve.schema_levels import (
    VALIDATING,
    Finding,
    Findings,
    Kind,
    Level,
    Scope,
    accepts_all,
    as_schema,
    canon,
    capped,
    child_path,
    level_of,
    loosened,
    same,
    show,
    type_names,
    type_text,
    unanalysed,
)

_DRAFT7 = "http://json-schema.org/draft-07/schema"
_ANNOTATIONS = {"description": Kind.DESCRIPTION, "title": Kind.TITLE}
_RESOLUTION = ("$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary")
_HANDLED = {
    *("type", "enum", "const", "multipleOf", "maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"),
    *("maxLength", "minLength", "pattern", "items", "prefixItems", "additionalItems", "contains"),
    *("minContains", "maxContains", "maxItems", "minItems", "uniqueItems", "unevaluatedItems"),
    *("properties", "patternProperties", "additionalProperties", "propertyNames", "required"),
    *("dependentRequired", "dependentSchemas", "maxProperties", "minProperties", "unevaluatedProperties"),
    *("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$ref", "$schema", *_RESOLUTION),
}
_NUMERIC, _STRING, _ARRAY, _OBJECT = (
    frozenset({"number", "integer"}),
    frozenset({"string"}),
    frozenset({"array"}),
    frozenset({"object"}),
)


def diff_schemas(old: Any, new: Any) -> list[Finding]:
    """All findings between two schemas, in document order; empty when nothing that validates changed."""
    validates, siblings_ignored = _draft(_dialect(new))
    scope = Scope(old, new, validates, siblings_ignored, _node, refs_stable=_refs_stable(old, new))
    out: Findings = []
    if (
        isinstance(old, dict)
        and isinstance(new, dict)
        and _schema_uri(old.get("$schema")) != _schema_uri(new.get("$schema"))
    ):
        out.append(unanalysed("$", "$schema changed; validation rules may differ"))
    dangling = sorted(r for r in references(new) if r.startswith("#") and resolve(new, r) is None)
    if dangling:  # validation fails on every value: nothing is proven
        out.append(unanalysed("$", f"$ref {show(dangling)} points at nothing in the new schema"))
    return out + _node(old, new, "$", scope)


def _refs_stable(old: Any, new: Any) -> bool:
    """Whether each `$ref` of either document points at the same schema in both."""
    refs = references(old) | references(new)
    return all(same(resolve(old, r), resolve(new, r)) for r in refs)


def references(schema: Any) -> set[str]:
    """Every `$ref` of a schema document."""
    if isinstance(schema, dict):
        own = {schema["$ref"]} if isinstance(schema.get("$ref"), str) else set()
        return own.union(*(references(v) for k, v in schema.items() if k not in ("enum", "const")))
    if isinstance(schema, list):
        return set().union(*(references(v) for v in schema))
    return set()


def _dialect(schema: Any) -> str | None:
    value = schema.get("$schema") if isinstance(schema, dict) else None
    return value if isinstance(value, str) else None


@cache
def _draft(dialect: str | None) -> tuple[frozenset[str], bool]:
    """The keywords the draft validates (with those read by another keyword: then, else,
    minContains...), and whether it ignores the siblings of `$ref` (Draft 7 and older do)."""
    cls = draft_of({"$schema": dialect} if dialect else {})
    names = set(cls.VALIDATORS)
    if "if" in names:
        names |= {"then", "else"}
    if "dependentRequired" in names:
        names |= {"minContains", "maxContains"}
    legacy = "$dynamicRef" not in names and "$recursiveRef" not in names
    return frozenset(names), legacy


def _node(old: Any, new: Any, path: str, scope: Scope) -> Findings:
    if scope.unchanged(old, new):
        return []
    a, b = as_schema(old), as_schema(new)
    if a is None or b is None:
        return [unanalysed(path, "schema changed")]
    if a is False:
        return [loosened(path, "the old schema accepted nothing")]
    if b is False:
        return [Finding(Level.MAJOR, path, Kind.CONSTRAINT_TIGHTENED, "the new schema accepts nothing")]
    a, b = _effective(a, scope), _effective(b, scope)
    if ("$ref" in a) != ("$ref" in b):  # a reference on one side only: compare what it points at
        key = (canon(a), canon(b))
        if key in scope.refs:
            return []  # already being compared further up: a recursive schema
        inlined = _inline(a, scope.old_root), _inline(b, scope.new_root)
        if inlined != (a, b):
            return scope.descend(*inlined, path, replace(scope, refs=scope.refs | {key}))
    out = _annotations(a, b, path, scope)
    watched = scope.watch_props or scope.watch_items
    if accepts_all(b) and not watched:
        return out if accepts_all(a) else [*out, loosened(path, "every constraint removed")]
    types, disjoint = _types(a, b, path, scope)
    out += types
    if disjoint:  # the rest of the old schema describes values that can no longer occur
        return out
    out += values(a, b, path, scope)
    out += _group(numbers(a, b, path, scope), a, b, _NUMERIC)
    out += _group(strings(a, b, path, scope), a, b, _STRING)
    out += _group(arrays(a, b, path, scope), a, b, _ARRAY)
    out += _group(objects(a, b, path, scope), a, b, _OBJECT)
    out += logic(a, b, path, _watching(b, scope))
    out += _others(a, b, path, scope)
    if level_of(out) > Level.PATCH and not watched:
        out = _finite(a, b, out, scope)
    return out


def _effective(schema: dict[str, Any] | bool, scope: Scope) -> dict[str, Any]:
    """`true` as `{}`; under Draft 7 a `$ref` replaces its siblings, so they are dropped."""
    if schema is True or schema is False:
        return {}
    if scope.ref_siblings_ignored and "$ref" in schema:
        return {"$ref": schema["$ref"]}
    return schema


def _inline(schema: dict[str, Any], root: Any) -> Any:
    """A schema that is only a local `$ref` (besides annotations) is its target."""
    if set(schema) & VALIDATING != {"$ref"} or not isinstance(schema["$ref"], str):
        return schema
    target = resolve(root, schema["$ref"])
    return schema if target is None else target


def _watching(new: dict[str, Any], scope: Scope) -> Scope:
    """What the new schema's `unevaluated*` keywords look at: the subschemas applied in place."""
    props = scope.watch_props or (scope.checks("unevaluatedProperties") and "unevaluatedProperties" in new)
    items = scope.watch_items or (scope.checks("unevaluatedItems") and "unevaluatedItems" in new)
    return replace(scope, watch_props=props, watch_items=items)


def _annotations(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    """Keywords that do not change what validates: documentation, `format` (not asserted by
    Plait's validators), `$defs` (read only through `$ref`), keywords the draft does not know."""
    out: Findings = []
    for key in dict.fromkeys([*old, *new]):
        if (key in scope.validates and key != "format") or key in _HANDLED or same(old.get(key), new.get(key)):
            continue
        if key in ("$defs", "definitions"):
            continue
        verb = "added" if key not in old else "removed" if key not in new else "changed"
        out.append(Finding(Level.PATCH, path, _ANNOTATIONS.get(key, Kind.ANNOTATION), f"{key} {verb}"))
    return out


def _expand(names: frozenset[str]) -> frozenset[str]:
    return names | {"integer"} if "number" in names else names


def _types(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> tuple[Findings, bool]:
    """The type change and whether no value of the old types can be of the new ones."""
    if not scope.checks("type"):
        return [], False
    before, after = type_names(old), type_names(new)
    if before == after:
        return [], False
    if after is None:
        assert before is not None
        return [Finding(Level.MINOR, path, Kind.TYPE_WIDENED, f"type constraint {type_text(before)} removed")], False
    if before is None:
        message = f"type restricted to {type_text(after)}; existing data of other types no longer validates"
        return [Finding(Level.MAJOR, path, Kind.TYPE_CHANGED, message)], False
    if before <= _expand(after):
        if after <= _expand(before):
            return [Finding(Level.PATCH, path, Kind.COSMETIC, "type rewritten with the same types")], False
        message = f"type widened from {type_text(before)} to {type_text(after)}; consumers must handle the new types"
        return [Finding(Level.MINOR, path, Kind.TYPE_WIDENED, message)], False
    message = f"type changed from {type_text(before)} to {type_text(after)}"
    return [Finding(Level.MAJOR, path, Kind.TYPE_CHANGED, message)], not _expand(before) & _expand(after)


def _group(findings: Findings, old: dict[str, Any], new: dict[str, Any], group: frozenset[str]) -> Findings:
    """Keywords of one type apply to no old value when the old `type` excludes that type."""
    before, after = type_names(old), type_names(new)
    if not findings or before is None or _expand(before) & group:
        return findings
    both = after is not None and not _expand(after) & group
    return capped(findings, Level.PATCH if both else Level.MINOR, "it applies to no value the old type allows")


def _others(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    out: Findings = []
    for key in dict.fromkeys([*old, *new]):
        if same(old.get(key), new.get(key)):
            continue
        if key in _RESOLUTION or (key in scope.validates and key not in _HANDLED and key != "format"):
            out.append(unanalysed(path, f"'{key}' changed from {show(old.get(key))} to {show(new.get(key))}"))
    return out


def _schema_uri(value: Any) -> Any:
    """An absent `$schema` means Draft 7 here (`plait.compile.schemas`); the trailing `#` is optional."""
    if value is None:
        return _DRAFT7
    return value.rstrip("#") if isinstance(value, str) else value


def _finite(old: dict[str, Any], new: dict[str, Any], findings: Findings, scope: Scope) -> Findings:
    """An old schema that lists its values (`enum`, `const`) is widened when the new one accepts each."""
    listed = _listed(old, scope)
    if listed is None or "$ref" in json.dumps(new) or "$ref" in json.dumps(old):
        return findings
    allowed = [v for v in listed if _valid(old, v, scope.old_root)]
    if not all(_valid(new, v, scope.new_root) for v in allowed):
        return findings
    offered = _listed(new, scope)
    equal = offered is not None and all(
        _valid(old, v, scope.old_root) for v in offered if _valid(new, v, scope.new_root)
    )
    ceiling = Level.PATCH if equal else Level.MINOR
    return capped(findings, ceiling, f"every value the old schema allows ({show(allowed)}) still validates")


def _listed(schema: dict[str, Any], scope: Scope) -> list[Any] | None:
    if "const" in schema and scope.checks("const"):
        return [schema["const"]]
    enum = schema.get("enum")
    return enum if isinstance(enum, list) and scope.checks("enum") else None


def _valid(schema: dict[str, Any], value: Any, root: Any) -> bool:
    dialect = _dialect(root)
    document = {**schema, "$schema": dialect} if dialect else schema
    try:
        return not violations(json.dumps(document, sort_keys=True), NO_REGISTRY, value)
    except Exception:  # a schema the validator cannot apply proves nothing
        return False


__all__ = [
    "Finding",
    "Kind",
    "Level",
    "child_path",
    "diff_schemas",
    "pair_renames",
    "references",
    "rename_key",
    "same",
    "type_names",
]
