"""Object keywords compared old against new, by what each property name must satisfy.

A name is constrained by its `properties` entry, every `patternProperties` regex it matches,
and, when neither applies, by `additionalProperties` (absent: anything). So a property added to
an open object is breaking (existing data may already hold it with another value), added to a
closed one it is a widening, and removing a property an open object still allows is a widening.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from plait.compile.schema_keywords import matches, regex_problem
from plait.evolve.diff_scalars import counts
from plait.evolve.schema_levels import (
    Finding,
    Findings,
    Kind,
    Level,
    Scope,
    accepts_all,
    child_path,
    level_of,
    loosened,
    same,
    show,
    tightened,
    type_names,
    type_text,
    unanalysed,
)

_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "$ref", "$dynamicRef", "dependentSchemas")


class _Side:
    """One schema's `properties`, `patternProperties` and `additionalProperties`, as its draft reads them."""

    def __init__(self, schema: dict[str, Any], scope: Scope) -> None:
        self.props: dict[str, Any] = schema.get("properties", {}) if scope.checks("properties") else {}
        self.patterns: dict[str, Any] = schema.get("patternProperties", {}) if scope.checks("patternProperties") else {}
        self.has_extra = scope.checks("additionalProperties") and "additionalProperties" in schema
        self.extra: Any = schema["additionalProperties"] if self.has_extra else True
        self.extra_is_unevaluated = (
            not self.has_extra
            and scope.checks("unevaluatedProperties")
            and "unevaluatedProperties" in schema
            and not any(k in schema for k in _IN_PLACE)
        )
        if self.extra_is_unevaluated:  # nothing else evaluates names here: it acts as additionalProperties
            self.extra = schema["unevaluatedProperties"]

    def valid(self) -> bool:
        shapes = isinstance(self.props, dict) and isinstance(self.patterns, dict)
        return shapes and all(isinstance(p, str) and regex_problem(p) is None for p in self.patterns)

    def constraints(self, name: str) -> list[Any]:
        """Every subschema the value of property `name` must satisfy."""
        found = [self.patterns[p] for p in self.patterns if matches(p, name)]
        if name in self.props:
            return [self.props[name], *found]
        return found or [self.extra]

    def evaluates(self, name: str) -> bool:
        return name in self.props or self.has_extra or any(matches(p, name) for p in self.patterns)


def objects(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    out = counts(old, new, ("maxProperties", "minProperties"), path, scope)
    before, after = _Side(old, scope), _Side(new, scope)
    if not before.valid() or not after.valid():
        return [*out, unanalysed(path, "properties or patternProperties changed")]
    out += _names(before, after, _required(old, scope), _required(new, scope), path, scope)
    out += _patterns(before, after, path, scope)
    out += _extra(before, after, path, scope)
    out += _dependencies(old, new, path, _watching(new, scope))
    if scope.checks("propertyNames"):
        out += scope.child(old.get("propertyNames", True), new.get("propertyNames", True), f"{path}.<name>")
    if scope.checks("unevaluatedProperties"):
        out += _unevaluated(old, new, before, after, path, scope)
    return out


def _watching(new: dict[str, Any], scope: Scope) -> Scope:
    if scope.checks("unevaluatedProperties") and "unevaluatedProperties" in new:
        return replace(scope, watch_props=True)
    return scope


def _required(schema: dict[str, Any], scope: Scope) -> list[str]:
    names = schema.get("required", []) if scope.checks("required") else []
    return [str(n) for n in names] if isinstance(names, list) else []


def _names(before: _Side, after: _Side, old_req: list[str], new_req: list[str], path: str, scope: Scope) -> Findings:
    """Each declared name (new order, then the removed ones) and each name whose requiredness changed."""
    was, now = set(old_req), set(new_req)
    names = list(dict.fromkeys([*after.props, *before.props, *new_req, *old_req]))
    declared = {*before.props, *after.props}
    per_name = {n: _constraint(before, after, n, child_path(path, n), scope) if n in declared else [] for n in names}
    added = [n for n in after.props if n not in before.props]
    removed = [n for n in before.props if n not in after.props]
    renames = _renames(before, after, removed, added, per_name)
    paired = {*renames, *renames.values()}
    out: Findings = []
    for old_name, new_name in renames.items():
        kind = rename_key(before.props[old_name]) or rename_key(after.props[new_name]) or "any"
        message = (
            f"property '{old_name}' removed and '{new_name}' added with the same type ({kind}): "
            f"probable rename of '{old_name}' to '{new_name}'; existing data still has '{old_name}'"
        )
        out.append(Finding(Level.MAJOR, child_path(path, old_name), Kind.RENAME, message))
    for name in names:
        if name in paired:
            continue
        at, inner = child_path(path, name), per_name[name]
        if name in now and name not in was:
            kind = Kind.ADDED_REQUIRED if name in added else Kind.BECAME_REQUIRED
            verb = "required property" if name in added else "property"
            out.append(
                Finding(
                    Level.MAJOR,
                    at,
                    kind,
                    f"{verb} '{name}' is now required; existing data without it no longer validates",
                )
            )
            if name in added:
                continue
        elif name in was and name not in now:
            out.append(Finding(Level.MINOR, at, Kind.BECAME_OPTIONAL, f"property '{name}' is no longer required"))
        if name in added:
            out.append(_added(name, at, inner, before))
        elif name in removed:
            out.append(_removed(name, at, inner))
        else:
            out += inner
    return out


def _constraint(before: _Side, after: _Side, name: str, at: str, scope: Scope) -> Findings:
    """What property `name` must satisfy, old against new: each new constraint by the closest old one."""
    olds, out = before.constraints(name), []
    for schema in after.constraints(name):
        candidates = [scope.child(old, schema, at) for old in olds]
        out += min(candidates, key=level_of)
    return out


def _added(name: str, at: str, inner: Findings, before: _Side) -> Finding:
    level = level_of(inner)
    details = "; ".join(f.message for f in inner if f.level is level)[:200]
    if level is Level.MAJOR:
        message = (
            f"property '{name}' added to an object that already allowed it: existing data may hold '{name}' "
            f"with a value the new schema refuses ({details})"
        )
        return Finding(Level.MAJOR, at, Kind.ADDED_OPTIONAL, message)
    if before.extra is False and not before.patterns:
        return Finding(Level.MINOR, at, Kind.ADDED_OPTIONAL, f"optional property '{name}' added to a closed object")
    return Finding(
        max(level, Level.PATCH), at, Kind.ADDED_OPTIONAL, f"optional property '{name}' added, as allowed before"
    )


def _removed(name: str, at: str, inner: Findings) -> Finding:
    level = level_of(inner)
    if level is Level.MAJOR:
        message = f"property '{name}' removed and no longer allowed as it was; existing data with it breaks"
        return Finding(Level.MAJOR, at, Kind.REMOVED, message)
    message = f"property '{name}' removed from `properties`; the object still allows it, so existing data validates"
    return Finding(max(level, Level.PATCH), at, Kind.REMOVED, message)


def _renames(
    before: _Side, after: _Side, removed: list[str], added: list[str], per_name: dict[str, Findings]
) -> dict[str, str]:
    """Breaking removals paired with additions of the same type: reported as one probable rename."""
    breaking = [n for n in removed if level_of(per_name[n]) is Level.MAJOR]
    if not breaking:
        breaking = removed if any(level_of(per_name[n]) is Level.MAJOR for n in added) else []
    return pair_renames(before.props, after.props, breaking, added)


def _patterns(before: _Side, after: _Side, path: str, scope: Scope) -> Findings:
    """Names matching a regex: a kept regex compares its schemas; an added one must accept what the
    old schema let those names hold; a removed one's names fall to `additionalProperties`."""
    out: Findings = []
    for regex, schema in after.patterns.items():
        at = f"{path}[/{regex}/]"
        if regex in before.patterns:
            out += scope.child(before.patterns[regex], schema, at)
            continue
        inner = [f for old in [before.extra, *before.patterns.values()] for f in scope.child(old, schema, at)]
        if level_of(inner) is Level.MAJOR:
            out.append(tightened(at, f"patternProperties {show(regex)} added over names the old schema allowed"))
        else:
            out.append(loosened(at, f"patternProperties {show(regex)} added for names the old schema refused"))
    for regex, schema in before.patterns.items():
        if regex not in after.patterns:
            at = f"{path}[/{regex}/]"
            if level_of(scope.child(schema, after.extra, at)) is Level.MAJOR:
                out.append(
                    tightened(at, f"patternProperties {show(regex)} removed: its names fall to additionalProperties")
                )
            else:
                out.append(loosened(at, f"patternProperties {show(regex)} removed"))
    return out


def _extra(before: _Side, after: _Side, path: str, scope: Scope) -> Findings:
    a, b = before.extra, after.extra
    if scope.unchanged(a, b):
        return []
    if b is True or (isinstance(b, dict) and accepts_all(b)):
        return (
            [loosened(path, "additional properties are now allowed")] if a is False else scope.child(a, b, f"{path}.*")
        )
    if b is False:
        return [] if a is False else [tightened(path, "additional properties are no longer allowed")]
    return scope.child(a, b, f"{path}.*")


def _dependencies(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    out: Findings = []
    if scope.checks("dependentRequired"):
        a, b = old.get("dependentRequired", {}), new.get("dependentRequired", {})
        if not isinstance(a, dict) or not isinstance(b, dict):
            return [unanalysed(path, "dependentRequired changed")]
        for key in dict.fromkeys([*b, *a]):
            more = set(b.get(key, [])) - set(a.get(key, []))
            fewer = set(a.get(key, [])) - set(b.get(key, []))
            if more:
                out.append(tightened(path, f"when '{key}' is present, {sorted(more)} are now required"))
            if fewer:
                out.append(loosened(path, f"when '{key}' is present, {sorted(fewer)} are no longer required"))
    if scope.checks("dependentSchemas"):
        a, b = old.get("dependentSchemas", {}), new.get("dependentSchemas", {})
        if not isinstance(a, dict) or not isinstance(b, dict):
            return [*out, unanalysed(path, "dependentSchemas changed")]
        for key in dict.fromkeys([*b, *a]):
            out += scope.in_place(a.get(key, True), b.get(key, True), path)
    return out


def _unevaluated(
    old: dict[str, Any], new: dict[str, Any], before: _Side, after: _Side, path: str, scope: Scope
) -> Findings:
    """`unevaluatedProperties` judges the names nothing else evaluated: evaluating fewer is a tightening."""
    out: Findings = []
    if scope.watch_props or ("unevaluatedProperties" in new and not after.extra_is_unevaluated):
        out += _evaluated(before, after, path)
    a, b = before.extra_is_unevaluated, after.extra_is_unevaluated
    if (a and b) or (a and "unevaluatedProperties" not in new) or (b and "unevaluatedProperties" not in old):
        return out  # compared as additionalProperties
    if "unevaluatedProperties" not in old and "unevaluatedProperties" not in new:
        return out
    return out + _extra_like(
        old.get("unevaluatedProperties", True), new.get("unevaluatedProperties", True), f"{path}.*", scope
    )


def _evaluated(before: _Side, after: _Side, path: str) -> Findings:
    """Evaluating fewer names makes `unevaluatedProperties` judge more; evaluating more, fewer."""
    lost = [n for n in before.props if not after.evaluates(n)]
    if lost or (before.has_extra and not after.has_extra) or _patterns_lost(before, after):
        message = f"fewer properties are evaluated ({show(lost)}), so unevaluatedProperties judges more"
        return [tightened(path, message)]
    gained = [n for n in after.props if not before.evaluates(n)]
    if gained or (after.has_extra and not before.has_extra) or _patterns_lost(after, before):
        message = f"more properties are evaluated ({show(gained)}), so unevaluatedProperties judges fewer"
        return [loosened(path, message)]
    return []


def _patterns_lost(before: _Side, after: _Side) -> bool:
    return not set(before.patterns) <= set(after.patterns) and not after.has_extra


def _extra_like(a: Any, b: Any, at: str, scope: Scope) -> Findings:
    if a is False and b is not False:
        return [loosened(at, "unevaluated properties are now allowed")]
    if b is False and a is not False:
        return [tightened(at, "unevaluated properties are no longer allowed")]
    return scope.child(a, b, at)


def rename_key(schema: Any) -> str | None:
    """The 'type' a rename must preserve: `type`, else object/array from the keywords, else unknown."""
    names = type_names(schema)
    if names is not None:
        return type_text(names)
    if isinstance(schema, dict):
        if "properties" in schema:
            return "object"
        if "items" in schema:
            return "array"
    return None


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
