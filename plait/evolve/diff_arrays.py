"""Array keywords compared old against new: items by position, `contains` with its counts, sizes, `uniqueItems`.

Item schemas are compared position by position: the schema that applies at index i is
`prefixItems[i]` (in Draft 7: `items[i]`) when there is one, else `items` (Draft 7:
`additionalItems`), else anything. So moving a schema from `items` into `prefixItems` is
compared by what each index accepts, not by keyword.
"""

from __future__ import annotations

from typing import Any

from plait.evolve.diff_scalars import counts
from plait.evolve.schema_levels import (
    Finding,
    Findings,
    Level,
    Scope,
    is_number,
    level_of,
    loosened,
    tightened,
    unanalysed,
)

Parts = tuple[list[Any], Any, bool]
"""(positional schemas, the schema of the other items, whether that one is stated)."""


def arrays(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    out = counts(old, new, ("maxItems", "minItems"), path, scope)
    if scope.checks("uniqueItems") and bool(old.get("uniqueItems")) != bool(new.get("uniqueItems")):
        out.append(
            tightened(path, "uniqueItems added") if new.get("uniqueItems") else loosened(path, "uniqueItems removed")
        )
    before, after = _parts(old, scope), _parts(new, scope)
    if before is None or after is None:
        return [*out, unanalysed(path, "items changed")]
    out += _positions(before, after, path, scope)
    if scope.checks("contains"):
        out += _contains(old, new, path, scope)
    if scope.checks("unevaluatedItems"):
        out += _unevaluated(old, new, before, after, path, scope)
    return out


def _parts(schema: dict[str, Any], scope: Scope) -> Parts | None:
    items = schema.get("items")
    if scope.checks("prefixItems"):
        prefix = schema.get("prefixItems", [])
        if not isinstance(prefix, list) or isinstance(items, list):
            return None
        return prefix, True if items is None else items, items is not None
    if isinstance(items, list):
        rest = schema.get("additionalItems") if scope.checks("additionalItems") else None
        return items, True if rest is None else rest, rest is not None
    return [], True if items is None else items, items is not None


def _positions(before: Parts, after: Parts, path: str, scope: Scope) -> Findings:
    (old_prefix, old_rest, _), (new_prefix, new_rest, _) = before, after
    out: Findings = []
    for index in range(max(len(old_prefix), len(new_prefix))):
        a = old_prefix[index] if index < len(old_prefix) else old_rest
        b = new_prefix[index] if index < len(new_prefix) else new_rest
        out += scope.child(a, b, f"{path}[{index}]")
    return out + scope.child(old_rest, new_rest, f"{path}[]")


def _contains(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    a, b = old.get("contains"), new.get("contains")
    if a is None and b is None:
        return []
    low_a, high_a = _counts(old, scope)
    low_b, high_b = _counts(new, scope)
    if b is None:
        return [loosened(path, "contains removed")]
    if a is None:
        if low_b == 0 and high_b is None:
            return []
        return [tightened(path, "new contains: existing arrays may hold no such item")]
    inner = scope.child(a, b, f"{path}[?]")
    allowed = Level.MINOR if high_b is None else Level.PATCH  # with maxContains, a wider contains counts more
    out = [f if f.level <= allowed else Finding(Level.MAJOR, f.path, f.kind, f.message) for f in inner]
    if level_of(inner) > allowed:
        out.append(tightened(path, "contains changed while maxContains counts its matches"))
    if low_b > low_a:
        out.append(tightened(path, f"minContains raised from {low_a} to {low_b}"))
    elif low_b < low_a:
        out.append(loosened(path, f"minContains lowered from {low_a} to {low_b}"))
    if high_b is not None and (high_a is None or high_b < high_a):
        out.append(tightened(path, f"maxContains lowered from {high_a} to {high_b}"))
    elif high_a is not None and (high_b is None or high_b > high_a):
        out.append(loosened(path, f"maxContains raised from {high_a} to {high_b}"))
    return out


def _counts(schema: dict[str, Any], scope: Scope) -> tuple[float, float | None]:
    """(minContains, maxContains) as the draft reads them: 1 and unbounded unless stated."""
    if not scope.checks("minContains"):
        return 1, None
    low, high = schema.get("minContains", 1), schema.get("maxContains")
    return (low if is_number(low) else 1), (high if is_number(high) else None)


def _unevaluated(
    old: dict[str, Any], new: dict[str, Any], before: Parts, after: Parts, path: str, scope: Scope
) -> Findings:
    """`unevaluatedItems` judges the items nothing else evaluated: fewer evaluated items is a tightening."""
    out: Findings = []
    if scope.watch_items or "unevaluatedItems" in new:
        had_contains, has_contains = "contains" in old, "contains" in new
        if len(after[0]) < len(before[0]) or (before[2] and not after[2]) or (had_contains and not has_contains):
            out.append(tightened(path, "fewer items are evaluated, so unevaluatedItems now judges more of them"))
        elif len(after[0]) > len(before[0]) or (after[2] and not before[2]) or (has_contains and not had_contains):
            out.append(loosened(path, "more items are evaluated, so unevaluatedItems judges fewer of them"))
    if "unevaluatedItems" not in old and "unevaluatedItems" not in new:
        return out
    return out + scope.child(old.get("unevaluatedItems", True), new.get("unevaluatedItems", True), f"{path}[]")
