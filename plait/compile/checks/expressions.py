"""Paths in a node's JavaScript (or Python CODE), checked as template paths are.

An expression that reads `nodes.extract.priorty` (a typo) gives `undefined` when it runs: a
CONDITION then matches no branch, a TRANSFORM outputs half an object, and nothing said why. So
the literal paths an expression reads from `input`, `nodes` and `current` are checked before
anything runs: the node exists and is upstream, and the field is one its schema declares, with
a "did you mean". A path built at run time (`nodes[name]`) is not checked; it is what the run
reads that the field ledger records. A node read by its bare name (`classify.label`, written as a
template would) is not defined when the expression runs: that is said before, with the way to
read it (`nodes.classify.label`).
"""

from __future__ import annotations

import re

from plait.compile.checks.templates import check_ref
from plait.compile.context import CheckContext
from plait.compile.diagnostics import Category
from plait.compile.plan import expression_of
from plait.model import NodeBase
from plait.sandbox.names import bindings_pattern, member_paths

CODE = "bad_expression_path"
BARE = "bare_node_name"
_JS_GLOBALS = frozenset(
    {"input", "nodes", "current", "Math", "JSON", "Date", "String", "Number", "Object", "Array", "Boolean"}
    | {"Promise", "Symbol", "Map", "Set", "RegExp", "Error", "console", "parseInt", "parseFloat", "isNaN"}
    | {"isFinite", "undefined", "NaN", "Infinity"}
)
"""Names an expression reads that are never a node's: a node so named is read through `nodes`."""


def check_expression_paths(ctx: CheckContext) -> None:
    """Every literal path in every node's expression names something the node can read."""
    ids = tuple(i for i in ctx.nodes if i.isidentifier() and i not in _JS_GLOBALS)
    bare = bindings_pattern(ids) if ids else None  # once per graph: per node, a long chain took O(nodes²)
    for node in ctx.nodes.values():
        if node.skill_scope is not None:
            continue  # inlined skill nodes were checked against the skill's own graph
        found = expression_of(node)
        if found is None:
            continue
        field, text = found
        for path in dict.fromkeys(member_paths(text)):
            check_ref(ctx, node, path, (field,), {}, code=CODE)
        if bare is not None and getattr(node, "language", "js") != "python":
            _check_bare_names(ctx, node, field, text, bare)


def _check_bare_names(ctx: CheckContext, node: NodeBase, field: str, text: str, bare: re.Pattern[str]) -> None:
    """A node's output read by the node's bare name (`bare` finds the graph's node ids that can be one),
    as a template reads it: a ReferenceError when it runs, unless the expression declares that name."""
    for path in dict.fromkeys(member_paths(text, bindings=bare)):
        name = str(path[0])
        declared = rf"\b(?:const|let|var|function)\s+{name}\b|\b{name}\s*=>|[(,]\s*{name}\s*[,)=]"
        if re.search(declared, text):
            continue
        dotted = ".".join(str(p) for p in path)
        ctx.report(
            Category.CONFIG,
            BARE,
            f"{field}: '{dotted}' reads node '{name}' by its bare name, which is not defined when the expression runs",
            node_id=node.id,
            path=ctx.node_path(node.id, field),
            hint=f"an expression reads a node's output as nodes.{dotted}",
        )
