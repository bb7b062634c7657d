"""Where three versions of a value differ, as paths to the values that changed.

A three-way comparison of a fork shows a changed schema or prompt as its values, not as one line
of JSON cut at the same place on every side: each path (`properties.label.enum`) whose value is
not the same on the three sides, with the value each side has (a side without it is left out).
"""

from __future__ import annotations

from typing import Any

SIDES = ("base", "parent", "fork")
_ABSENT = object()


def leaves(value: Any, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every non-object value in `value` by its path of object keys; a list is one value (its
    items read better together: an enum, a list of nodes)."""
    if isinstance(value, dict) and value:
        found: dict[tuple[str, ...], Any] = {}
        for key, item in value.items():
            found.update(leaves(item, (*prefix, str(key))))
        return found
    return {prefix: value}


def changed_paths(base: Any, parent: Any, fork: Any) -> list[dict[str, Any]]:
    """Each path whose value is not the same on the three sides, in the order the sides list
    them: `{"path", "base", "parent", "fork"}`, a side that lacks the path left out."""
    sides = [leaves(base), leaves(parent), leaves(fork)]
    order = list(dict.fromkeys(path for side in sides for path in side))
    out = []
    for path in order:
        values = [side.get(path, _ABSENT) for side in sides]
        if all(v == values[0] for v in values[1:]):
            continue
        entry: dict[str, Any] = {"path": ".".join(path) or "(the whole value)"}
        entry.update({name: v for name, v in zip(SIDES, values, strict=True) if v is not _ABSENT})
        out.append(entry)
    return out
