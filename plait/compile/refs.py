"""Resolve a template path to what it names: run input, a node's output, `current`, or a param.

Paths: `input.…`, `<node_id>.…` / `nodes.<node_id>.…`, `current.…`,
`params.…`, or a bare param name (`{{ analysis }}`). The compiler uses
this to check references; the renderer uses it to build the same names.

Graphs written after the original design documents use their names for the same things, and
they mean what Plait's do: `currentInput` is `current`, `nodeOutputs` is `nodes`,
`<node_id>.output.…` is `<node_id>.…` (a node's output read as a whole, unless it has a field
`output`, see `ResolvedRef.output_alias`), and `currentNodeId` is the id of the node whose
template it is. Resolving them here keeps one meaning for the checks, the pre-check and the
renderer.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from plait.compile.template_types import Segment

RESERVED_ROOTS = ("input", "nodes", "current", "params")
STATE_ALIASES = {"currentInput": "current", "nodeOutputs": "nodes"}
"""Other names for `current` and `nodes`, as graphs written after the design documents use them."""
NODE_ID_NAME = "currentNodeId"
"""The name that prints the id of the node whose template it is."""
OUTPUT_STEP = "output"
"""`<node_id>.output`: the node's output as a whole (when it has no field of that name)."""


class RefKind(StrEnum):
    """What a template path's root names: the run input, a node's output, `current`, a param,
    or the id of the node itself (`currentNodeId`)."""

    INPUT = "input"
    NODE = "node"
    CURRENT = "current"
    PARAM = "param"
    NODE_ID = "node_id"


@dataclass(frozen=True, slots=True)
class ResolvedRef:
    """What a template path names, and the path inside that value."""

    kind: RefKind
    path: tuple[Segment, ...]
    """Path inside the named value (after the node id / param name)."""
    target: str | None = None
    """Node id for NODE, param name for PARAM."""
    output_alias: bool = False
    """NODE written `<node_id>.output…`: `path[0]` is that `output`, which reads the node's field
    `output` when its output has one (its schema declares it, or the value holds it), else stands
    for the whole output (`inside` says which path is read)."""

    def inside(self, has_output_field: bool) -> tuple[Segment, ...]:
        """The path read inside the named value, `has_output_field` saying whether that value
        has a field `output` (for a path written `<node_id>.output…`)."""
        return self.path[1:] if self.output_alias and not has_output_field else self.path


class RefError(ValueError):
    """The path names nothing; `suggestions` are close names to offer."""

    def __init__(self, message: str, suggestions: list[str] | None = None):
        super().__init__(message)
        self.suggestions = suggestions or []


def resolve_ref(path: tuple[Segment, ...], node_ids: Collection[str], params: Collection[str]) -> ResolvedRef:
    """What `path` names among `node_ids` and `params`; RefError, with suggestions, when its root
    names nothing. A bare name is a param before it is one of the other names for `current`,
    `nodes` or the node's id, and those before a node id."""
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
        return _node_of_nodes(root, rest, node_ids)
    if root in params:
        return ResolvedRef(RefKind.PARAM, rest, root)
    if root in STATE_ALIASES:
        if STATE_ALIASES[root] == "current":
            return ResolvedRef(RefKind.CURRENT, rest)
        return _node_of_nodes(root, rest, node_ids)
    if root == NODE_ID_NAME:
        if rest:
            raise RefError(f"'{NODE_ID_NAME}' is the id of this node, a text: it has no field '{rest[0]}'")
        return ResolvedRef(RefKind.NODE_ID, ())
    if root in node_ids:
        return ResolvedRef(RefKind.NODE, rest, root, output_alias=bool(rest) and rest[0] == OUTPUT_STEP)
    raise RefError(f"unknown name '{root}'", [*RESERVED_ROOTS, *params, *node_ids])


def _node_of_nodes(root: str, rest: tuple[Segment, ...], node_ids: Collection[str]) -> ResolvedRef:
    """`nodes.<node_id>.…` (or written `nodeOutputs.…`)."""
    if not rest:
        raise RefError(f"'{root}' needs a node id: {root}.<node_id>")
    node_id = str(rest[0])
    if node_id not in node_ids:
        raise RefError(f"no node named '{node_id}'", list(node_ids))
    return ResolvedRef(RefKind.NODE, rest[1:], node_id)
