"""Expressions evaluated ahead: a TRANSFORM's or CONDITION's expression starts evaluating when
the node is claimed, while the transaction that claims it is written, and the node takes that
value when it runs, if what the expression sees is still exactly what it was given.

A node's evaluation is a round trip to an evaluator process, and the commit before it is a
transaction on the loop; started together, the one hides the other, which in a chain of such
nodes saves most of a round trip per node (docs/performance.md). An evaluation has no effect
but its value, so one whose node never runs, or whose scope changed meanwhile (a correction
taken up, an output replaced), is dropped, and the node evaluates again as it would have. A
plain expression (`plait.sandbox.plain`: it only reads its scope) needs no process: its value is
computed here at once, and kept the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

from plait.compile.plan import expression_of
from plait.engine.render import js_scope
from plait.engine.runtime import Runtime
from plait.engine.state import Ahead, RunState
from plait.model.nodes import NodeBase, NodeType

EVALUATED_FIRST = frozenset({NodeType.TRANSFORM, NodeType.CONDITION})
"""The node types whose executor starts by evaluating the node's expression in the sandbox."""


def start_ahead(state: RunState, node: NodeBase, rt: Runtime) -> None:
    """Start evaluating `node`'s expression on what it sees now (its predecessors are done: it
    was just claimed). Call it on the loop, before the claim's commit is awaited."""
    found = expression_of(node) if node.type in EVALUATED_FIRST else None
    if found is None:  # a CONDITION that asks a model has no expression
        return
    expression = found[1]
    try:
        scope = js_scope(state, node)
        task = asyncio.ensure_future(evaluation(state, node, rt, expression, scope, ahead=True))
    except Exception:  # the node meets the same problem when it runs, and reports it as its own
        return
    task.add_done_callback(_retrieved)
    state.ahead[node.id] = Ahead(expression, scope, task)


def evaluation(
    state: RunState, node: NodeBase, rt: Runtime, expression: str, scope: dict[str, Any], *, ahead: bool = False
) -> Awaitable[Any]:
    """The value of `node`'s `expression` on `scope`: computed here at once when it is plain
    (`plait.sandbox.plain`: it only reads its scope; a done future, awaited without a loop turn),
    else asked of an evaluator process."""
    sandbox = rt.sandbox()
    plain = sandbox.plain_value(expression, scope, timeout_s=node.timeout_s)
    if plain is not None:
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        done.set_result(plain[0])
        return done
    owner = state.root_run_id or None  # a run and its child runs share one fair share
    return sandbox.aevaluate(expression, scope, timeout_s=node.timeout_s, owner=owner, ahead=ahead)


def taken_ahead(state: RunState, node: NodeBase, expression: str, scope: dict[str, Any]) -> asyncio.Future[Any] | None:
    """The evaluation started ahead for `node`, when it evaluated `expression` on this very scope
    (the same values, not merely equal ones: `1` and `true` compare equal in Python); else None,
    and the node evaluates now."""
    ahead = state.ahead.pop(node.id, None)
    if ahead is None or ahead.expression != expression or not _same(ahead.scope, scope):
        return None
    return ahead.task


def _same(given: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether two scopes hold the same values: each name's value is the same object, or both
    are mappings (`nodes`, a join's `current`, rebuilt on each call) of the same objects."""
    if given.keys() != now.keys():
        return False
    for name, value in given.items():
        other = now[name]
        if value is other:
            continue
        if not (type(value) is dict and type(other) is dict and value.keys() == other.keys()):
            return False
        if any(value[key] is not other[key] for key in value):
            return False
    return True


def _retrieved(task: asyncio.Future[Any]) -> None:
    """A dropped evaluation's error is nobody's: read it so that asyncio does not report it."""
    if not task.cancelled():
        task.exception()
