"""In-place applicators compared old against new: `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `$ref`.

`allOf` holds when each new branch follows from some old branch (or from the rest of the old
schema); `anyOf` when each old branch fits some new branch. `oneOf` is not monotone (a wider
branch may make a value match two), so only equivalent branches keep it safe. `not` turns the
comparison around. References inside the document are followed and compared by their targets.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import unquote

from plait.evolve.schema_levels import (
    Finding,
    Findings,
    Kind,
    Level,
    Scope,
    accepts_all,
    canon,
    capped,
    level_of,
    loosened,
    show,
    tightened,
    unanalysed,
)


def logic(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    out: Findings = []
    if scope.checks("allOf"):
        out += _all_of(old, new, path, scope)
    if scope.checks("anyOf"):
        out += _any_of(old, new, path, scope)
    if scope.checks("oneOf"):
        out += _one_of(old, new, path, scope)
    if scope.checks("not"):
        out += _not(old.get("not"), new.get("not"), path, scope)
    if scope.checks("if"):
        out += _conditional(old, new, path, scope)
    if scope.checks("$ref"):
        out += _ref(old, new, path, scope)
    return out


def _branches(schema: dict[str, Any], keyword: str) -> list[Any] | None:
    value = schema.get(keyword)
    return value if isinstance(value, list) else None


def _without(schema: dict[str, Any], *keywords: str) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in keywords}


def _best(candidates: list[Findings]) -> Findings:
    return min(candidates, key=level_of) if candidates else [unanalysed("$", "nothing to compare")]


def _all_of(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    before, after = _branches(old, "allOf") or [], _branches(new, "allOf") or []
    if scope.unchanged(before, after):
        return []
    if not isinstance(old.get("allOf", []), list) or not isinstance(new.get("allOf", []), list):
        return [unanalysed(path, "allOf changed")]
    watched = scope.watch_props or scope.watch_items
    rest = _without(old, "allOf")
    out: Findings = []
    used: set[int] = set()
    for index, branch in enumerate(after):
        candidates = [(i, scope.in_place(b, branch, path)) for i, b in enumerate(before) if not watched or i == index]
        if not watched:
            candidates.append((-1, scope.in_place(rest, branch, path)))
        if not candidates:
            out.append(tightened(path, f"allOf branch {index} added"))
            continue
        chosen, findings = min(candidates, key=lambda c: level_of(c[1]))
        used.add(chosen)
        if level_of(findings) is Level.MAJOR:
            out.append(tightened(path, f"allOf branch {index} asks what the old schema did not"))
        out += findings
    dropped = [i for i in range(len(before)) if i not in used and not any(scope.unchanged(before[i], b) for b in after)]
    if dropped and watched:
        out.append(tightened(path, f"allOf branches {dropped} removed while unevaluated keywords look at them"))
    elif dropped:
        out.append(loosened(path, f"allOf branches {dropped} removed"))
    return out


def _any_of(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    """`anyOf` (an old `oneOf` counts as one: matching one branch exactly is matching at least one)."""
    after = _branches(new, "anyOf")
    before = _branches(old, "anyOf")
    if before is None and after is not None and "oneOf" not in new:
        before = _branches(old, "oneOf")
    if scope.unchanged(before, after):
        return []
    if ("anyOf" in new and after is None) or (after is not None and not after):
        return [unanalysed(path, "anyOf changed")]
    if after is None:
        return [loosened(path, "anyOf removed")] if before else []
    watched = scope.watch_props or scope.watch_items
    out: Findings = []
    sources = before if before is not None else [_without(old, "anyOf")]
    matched: set[int] = set()
    for index, branch in enumerate(sources):
        candidates = [(j, scope.in_place(branch, b, path)) for j, b in enumerate(after)]
        if before is not None and not watched:
            candidates += [(j, scope.in_place(_without(old, "anyOf", "oneOf"), b, path)) for j, b in enumerate(after)]
        j, findings = min(candidates, key=lambda c: level_of(c[1]))
        if level_of(findings) is Level.MAJOR:
            what = f"anyOf branch {index}" if before is not None else "the old schema"
            out.append(tightened(path, f"{what} fits no new anyOf branch"))
            return out
        matched.add(j)
        out += findings
    if before is None:
        return [*out, loosened(path, f"anyOf added; the old schema fits branch {min(matched)}")]
    added = [j for j in range(len(after)) if j not in matched and not any(scope.unchanged(after[j], b) for b in before)]
    if added:
        out.append(loosened(path, f"anyOf branches {added} added: {show([after[j] for j in added])}"))
    return out


def _one_of(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    before, after = _branches(old, "oneOf"), _branches(new, "oneOf")
    if scope.unchanged(before, after):
        return []
    if after is None:
        return [loosened(path, "oneOf removed")] if before else []
    if before is None:
        if len(after) == 1:
            return _capped_major(scope.in_place(_without(old, "oneOf"), after[0], path), path, "oneOf added")
        return [tightened(path, "oneOf added; existing data may match none or several of its branches")]
    if sorted(map(canon, before)) == sorted(map(canon, after)):
        return [Finding(Level.PATCH, path, Kind.COSMETIC, "oneOf branches reordered")]
    if len(before) == len(after):
        inner = [f for a, b in zip(before, after, strict=True) for f in scope.in_place(a, b, path)]
        if level_of(inner) <= Level.PATCH:
            return inner
    return [tightened(path, "oneOf branches changed; an existing value may now match none or several")]


def _capped_major(findings: Findings, path: str, what: str) -> Findings:
    if level_of(findings) is Level.MAJOR:
        return [tightened(path, what)]
    return findings


def _not(a: Any, b: Any, path: str, scope: Scope) -> Findings:
    if scope.unchanged(a, b):
        return []
    if b is None:
        return [loosened(path, "not removed")]
    if a is None:
        return [] if b is False else [tightened(path, f"not {show(b)} added: values it matches are refused")]
    inner = scope.child(b, a, path)  # what the new `not` refuses must be refused by the old one
    level = level_of(inner)
    if level <= Level.PATCH:
        return capped(inner, Level.PATCH, "inside not")
    if level is Level.MINOR:
        return [loosened(path, "not refuses fewer values")]
    return [tightened(path, f"not changed from {show(a)} to {show(b)}: it may refuse more values")]


def _conditional(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    a, b = old.get("if"), new.get("if")
    then_a, else_a = (old.get("then", True), old.get("else", True)) if a is not None else (True, True)
    then_b, else_b = (new.get("then", True), new.get("else", True)) if b is not None else (True, True)
    if scope.unchanged((a, then_a, else_a), (b, then_b, else_b)):
        return []
    if b is None or (accepts_all(then_b) and accepts_all(else_b)):
        return [loosened(path, "if/then/else removed")] if a is not None else []
    if a is None:
        return [tightened(path, "if/then/else added")]
    condition = scope.in_place(a, b, path)
    if level_of(condition) > Level.PATCH:
        return [tightened(path, f"if changed from {show(a)} to {show(b)}: values may take the other branch")]
    return condition + scope.in_place(then_a, then_b, path) + scope.in_place(else_a, else_b, path)


def _ref(old: dict[str, Any], new: dict[str, Any], path: str, scope: Scope) -> Findings:
    a, b = old.get("$ref"), new.get("$ref")
    if a is None and b is None:
        return []
    target_a = resolve(scope.old_root, a) if isinstance(a, str) else None
    target_b = resolve(scope.new_root, b) if isinstance(b, str) else None
    if b is None:
        return [loosened(path, f"$ref {show(a)} removed")]
    if (a is not None and not isinstance(a, str)) or not isinstance(b, str):
        return [unanalysed(path, "$ref changed")]
    if target_b is None:
        if a == b and not b.startswith("#"):
            return []  # another schema of the registry: its own entry says how it changed
        return [unanalysed(path, f"$ref {show(b)} is not followed")]
    if (a, b) in scope.refs:
        return []  # already being compared further up: a recursive schema
    inner = replace(scope, refs=scope.refs | {(str(a), b)})
    if a is None:
        return _capped_major(inner.in_place(_without(old, "$ref"), target_b, path), path, f"$ref {show(b)} added")
    if target_a is None:
        return [unanalysed(path, f"$ref changed from {show(a)} to {show(b)}")]
    return inner.in_place(target_a, target_b, path)


def resolve(root: Any, ref: str) -> Any:
    """The subschema a local reference (`#`, `#/$defs/x`) points at; None for anything else."""
    if not ref.startswith("#") or (ref != "#" and not ref.startswith("#/")) or _nested_ids(root):
        return None
    node = root
    for token in ref[2:].split("/") if ref != "#" else []:
        key = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node if isinstance(node, dict | bool) else None


def _nested_ids(node: Any, top: bool = True) -> bool:
    """Whether a subschema sets its own `$id` (references inside it resolve against it, not the root)."""
    if isinstance(node, dict):
        if not top and isinstance(node.get("$id"), str):
            return True
        return any(_nested_ids(v, False) for k, v in node.items() if k not in ("enum", "const"))
    if isinstance(node, list):
        return any(_nested_ids(v, False) for v in node)
    return False
