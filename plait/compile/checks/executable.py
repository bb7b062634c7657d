"""Node types this release validates but cannot execute yet: a warning, so that `validate` and
`--dry-run` do not say "ok" for a graph that `plait run` will then refuse."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from plait.compile.context import CheckContext
from plait.compile.diagnostics import Category
from plait.model.nodes import NodeBase, NodeType

EXECUTABLE = frozenset(
    {
        NodeType.LLM_CALL,
        NodeType.CONDITION,
        NodeType.MERGE,
        NodeType.TRANSFORM,
        NodeType.HUMAN_REVIEW,
        NodeType.WAIT,
        NodeType.TOOL,
        NodeType.CODE,
    }
)
"""What the engine executes (`plait.engine.executors.SUPPORTED`, which a test keeps equal to this;
the compiler does not import the engine, which would load the store into `plait validate`)."""
EXPANDED = frozenset({NodeType.SKILL})
"""Replaced by their graph's nodes before a run, so never executed themselves."""
CODE = "not_executable"


def unexecutable(nodes: Iterable[NodeBase]) -> Iterator[NodeBase]:
    """The nodes a run of this release would refuse for their type."""
    return (node for node in nodes if node.type not in EXECUTABLE | EXPANDED)


def message(node: NodeBase) -> str:
    """The warning for a node whose type this release validates but does not execute."""
    return f"{node.type} nodes are validated but not executed by this release: `plait run` refuses this graph"


HINT = f"until they are, use only {', '.join(sorted(EXECUTABLE))} nodes (and SKILLs made of them)"


def check_executable(ctx: CheckContext) -> None:
    """Warn (`planning/not_executable`) about each node a run of this release would refuse for its type."""
    for node in unexecutable(ctx.nodes.values()):
        ctx.report(Category.PLANNING, CODE, message(node), node_id=node.id, hint=HINT, warning=True)
