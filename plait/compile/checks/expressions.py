"""Paths in a node's JavaScript (or Python CODE), checked as template paths are.

An expression that reads `nodes.extract.priorty` (a typo) gives `undefined` when it runs: a
CONDITION then matches no branch, a TRANSFORM outputs half an object, and nothing said why. So
the literal paths an expression reads from `input`, `nodes` and `current` are checked before
anything runs: the node exists and is upstream, and the field is one its schema declares, with
a "did you mean". A path built at run time (`nodes[name]`) is not checked; it is what the run
reads that the field ledger records.
"""

from __future__ import annotations

from plait.compile.checks.templates import check_ref
from plait.compile.context import CheckContext
from plait.compile.plan import expression_of
from plait.sandbox.names import member_paths

CODE = "bad_expression_path"


def check_expression_paths(ctx: CheckContext) -> None:
    """Every literal path in every node's expression names something the node can read."""
    for node in ctx.nodes.values():
        if node.skill_scope is not None:
            continue  # inlined skill nodes were checked against the skill's own graph
        found = expression_of(node)
        if found is None:
            continue
        field, text = found
        for path in dict.fromkeys(member_paths(text)):
            check_ref(ctx, node, path, (field,), {}, code=CODE)
