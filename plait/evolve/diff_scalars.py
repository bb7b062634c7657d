"""Value keywords compared old against new: `enum`, `const`, numeric bounds, `multipleOf`, string length, `pattern`.

Each rule says minor only when every value the old keyword accepts, the new one accepts too.
"""

from __future__ import annotations

from typing import Any

from plait.evolve.schema_levels import (
    Finding,
    Findings,
    Kind,
    Level,
    Scope,
    canon,
    is_number,
    loosened,
    same,
    show,
    tightened,
    unanalysed,
)


def values(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    """`enum` and `const`, each a set of allowed values (absent: any value)."""
    out: Findings = []
    if scope.checks("enum"):
        out += _enum(old.get("enum"), new.get("enum"), path)
    if scope.checks("const"):
        out += _const(old, new, path)
    return out


def _key(value: Any) -> str:
    """What jsonschema's equality compares: 1 and 1.0 are equal, true and 1 are not."""
    if is_number(value) and float(value).is_integer():
        return canon(int(value))
    if isinstance(value, list):
        return "[" + ",".join(_key(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{canon(k)}:{_key(v)}" for k, v in sorted(value.items())) + "}"
    return canon(value)


def _enum(old: Any, new: Any, path: str) -> Findings:
    if same(old, new):
        return []
    if old is None:
        message = f"values restricted to {show(new)}; existing data with other values no longer validates"
        return [Finding(Level.MAJOR, path, Kind.ENUM_ADDED, message)]
    if new is None:
        return [Finding(Level.MINOR, path, Kind.ENUM_REMOVED, f"enum {show(old)} removed; any value now validates")]
    if not isinstance(old, list) or not isinstance(new, list):
        return [unanalysed(path, "enum changed")]
    old_keys, new_keys = {_key(v) for v in old}, {_key(v) for v in new}
    removed = [v for v in old if _key(v) not in new_keys]
    added = [v for v in new if _key(v) not in old_keys]
    out: Findings = []
    if removed:
        message = f"enum narrowed, values removed: {show(removed)}; existing data with them no longer validates"
        out.append(Finding(Level.MAJOR, path, Kind.ENUM_NARROWED, message))
    if added:
        message = f"enum widened, values added: {show(added)}; consumers must handle the new values"
        out.append(Finding(Level.MINOR, path, Kind.ENUM_WIDENED, message))
    return out


def _const(old: dict[str, Any], new: dict[str, Any], path: str) -> Findings:
    had, has = "const" in old, "const" in new
    if not had and not has:
        return []
    if had and has:
        if _key(old["const"]) == _key(new["const"]):
            return []
        message = f"const changed from {show(old['const'])} to {show(new['const'])}"
        return [Finding(Level.MAJOR, path, Kind.ENUM_NARROWED, message)]
    if had:
        return [Finding(Level.MINOR, path, Kind.ENUM_REMOVED, f"const {show(old['const'])} removed")]
    message = f"value fixed to {show(new['const'])}; existing data with another value no longer validates"
    return [Finding(Level.MAJOR, path, Kind.ENUM_ADDED, message)]


Bound = tuple[float, bool] | None
"""(limit, exclusive) of one side of a range; None: unbounded."""


def numbers(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    """The lower and upper bounds (inclusive and exclusive taken together) and `multipleOf`."""
    out: Findings = []
    for upper in (False, True):
        keys = ("maximum", "exclusiveMaximum") if upper else ("minimum", "exclusiveMinimum")
        if all(same(old.get(k), new.get(k)) for k in keys):
            continue
        try:
            a, b = _bound(old, keys, upper, scope), _bound(new, keys, upper, scope)
        except ValueError:
            out.append(unanalysed(path, f"{' / '.join(keys)} changed to something that is not a number"))
            continue
        out.append(_range_finding(" / ".join(keys), a, b, upper, path))
    if scope.checks("multipleOf"):
        out += _multiple_of(old.get("multipleOf"), new.get("multipleOf"), path)
    return out


def _bound(schema: dict[str, Any], keys: tuple[str, str], upper: bool, scope: Scope) -> Bound:
    """The tighter of the inclusive and the exclusive limit; ValueError when one is not a number."""
    found: list[tuple[float, bool]] = []
    for key, exclusive in zip(keys, (False, True), strict=True):
        value = schema.get(key)
        if value is None or not scope.checks(key):
            continue
        if not is_number(value):
            raise ValueError(key)
        found.append((value, exclusive))
    if not found:
        return None
    sign = -1 if upper else 1
    return max(found, key=lambda bound: (sign * bound[0], bound[1]))


def _range_finding(keys: str, a: Bound, b: Bound, upper: bool, path: str) -> Finding:
    if b is None:
        return loosened(path, f"{keys} {_text(a, upper)} removed")
    if a is None:
        return tightened(path, f"new {keys} {_text(b, upper)}")
    if a == b:
        return Finding(Level.PATCH, path, Kind.COSMETIC, f"{keys} rewritten with the same bound {_text(b, upper)}")
    wider = (b[0] > a[0]) if upper else (b[0] < a[0])
    if wider or (b[0] == a[0] and a[1] and not b[1]):
        return loosened(path, f"{keys} loosened from {_text(a, upper)} to {_text(b, upper)}")
    return tightened(path, f"{keys} tightened from {_text(a, upper)} to {_text(b, upper)}")


def _text(bound: Bound, upper: bool) -> str:
    if bound is None:
        return "none"
    limit, exclusive = bound
    return f"{'<' if upper else '>'}{'' if exclusive else '='} {limit}"


def _multiple_of(a: Any, b: Any, path: str) -> Findings:
    if same(a, b):
        return []
    if a is None:
        return [tightened(path, f"new constraint multipleOf={show(b)}")]
    if b is None:
        return [loosened(path, f"constraint multipleOf={show(a)} removed")]
    integral = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (a, b))
    if integral and a % b == 0:  # every multiple of a is one of b; float steps round, so are not compared
        return [loosened(path, f"multipleOf loosened from {a} to {b}")]
    return [tightened(path, f"multipleOf changed from {show(a)} to {show(b)}")]


def strings(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    """`minLength`, `maxLength` and `pattern` (`format` is an annotation: Plait's validators do not assert it)."""
    out: Findings = []
    for key, upper in (("maxLength", True), ("minLength", False)):
        out += _count(old, new, key, upper, path, scope)
    a, b = old.get("pattern"), new.get("pattern")
    if scope.checks("pattern") and not same(a, b):
        if a is None:
            out.append(tightened(path, f"new pattern {show(b)}"))
        elif b is None:
            out.append(loosened(path, f"pattern {show(a)} removed"))
        else:
            out.append(tightened(path, f"pattern changed from {show(a)} to {show(b)}"))
    return out


def counts(old: dict[str, Any], new: dict[str, Any], keys: tuple[str, str], path: str, scope: Scope) -> Findings:
    """A (max, min) pair of counts such as maxItems/minItems or maxProperties/minProperties."""
    return [
        f for key, upper in zip(keys, (True, False), strict=True) for f in _count(old, new, key, upper, path, scope)
    ]


def _count(old: dict[str, Any], new: dict[str, Any], key: str, upper: bool, path: str, scope: Scope) -> Findings:
    """One count; an absent minimum count is 0 (so `minLength: 0` changes nothing)."""
    a, b = old.get(key), new.get(key)
    if same(a, b) or not scope.checks(key):
        return []
    if (a is not None and not is_number(a)) or (b is not None and not is_number(b)):
        return [unanalysed(path, f"{key} changed from {show(a)} to {show(b)}")]
    if not upper:
        a, b = a or 0, b or 0
    low = None if a is None else (a, False)
    high = None if b is None else (b, False)
    return [_range_finding(key, low, high, upper, path)]
