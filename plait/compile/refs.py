"""Resolve a template path to what it names: run input, a node's output, `current`, or a param.

Paths: `input.…`, `<node_id>.…` / `nodes.<node_id>.…`, `current.…`,
`params.…`, or a bare param name (`{{ analysis }}`). The compiler uses
this to check references; the renderer will use it to build the same names.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from plait.compile.template_types import Segment

RESERVED_ROOTS = ("input", "nodes", "current", "params")


class RefKind(StrEnum):
    """What a template path's root names: the run input, a node's output, `current` or a param."""

    INPUT = "input"
    NODE = "node"
    CURRENT = "current"
    PARAM = "param"


@dataclass(frozen=True, slots=True)
class ResolvedRef:
    """What a template path names, and the path inside that value."""

    kind: RefKind
    path: tuple[Segment, ...]
    """Path inside the named value (after the node id / param name)."""
    target: str | None = None
    """Node id for NODE, param name for PARAM."""


class RefError(ValueError):
    """The path names nothing; `suggestions` are close names to offer."""

    def __init__(self, message: str, suggestions: list[str] | None = None):
        super().__init__(message)
        self.suggestions = suggestions or []


def resolve_ref(path: tuple[Segment, ...], node_ids: Collection[str], params: Collection[str]) -> ResolvedRef:
    """What `path` names among `node_ids` and `params`; RefError, with suggestions, when its root
    names nothing. A bare name is a param before it is a node."""
    root, rest = str(path[0]), path[1:]
    if root == "input":
        return ResolvedRef(RefKind.INPUT, rest)
    if root == "current":
        return ResolvedRef(RefKind.CURRENT, rest)
    if root == "params":
        if not rest:
            raise RefError("'params' needs a name: params.<name>")
        name = str(rest[0])
        if name not in params:
            raise RefError(f"no param named '{name}' on this node", list(params))
        return ResolvedRef(RefKind.PARAM, rest[1:], name)
    if root == "nodes":
        if not rest:
            raise RefError("'nodes' needs a node id: nodes.<node_id>")
        node_id = str(rest[0])
        if node_id not in node_ids:
            raise RefError(f"no node named '{node_id}'", list(node_ids))
        return ResolvedRef(RefKind.NODE, rest[1:], node_id)
    if root in params:
        return ResolvedRef(RefKind.PARAM, rest, root)
    if root in node_ids:
        return ResolvedRef(RefKind.NODE, rest, root)
    raise RefError(f"unknown name '{root}'", [*RESERVED_ROOTS, *params, *node_ids])
