"""The most child runs and node runs a graph can make, known before it runs.

A SUBGRAPH starts one child run, a LOOP at most `max_iterations`, a MAP one per item of its list;
each child run executes its graph's nodes and may fan out again. Multiplied down the nesting,
`LOOP(10,000) × MAP × MAP` reaches billions of runs, so the compiler refuses a graph whose bounds
pass the run budget (`[runs]` in plait.toml) before a run of it is ever started.

A MAP's bound is the `maxItems` its list declares: in the `input_schema` for `input.…`, in the
out-edge schemas of the node for `node.…` (the smallest, when several declare one). A list that
declares none counts as one item here, since nothing says how long it will be: such a MAP is
bounded at run time, by the same budget, like everything else a run does. A stored graph that a
node names (not a body or a file, which are embedded) counts as one node run: it is checked when
it is stored, and at run time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from plait.compile.schemas import schema_at
from plait.compile.templates import split_path
from plait.model.graph import GraphDef
from plait.model.nodes import NodeBase, NodeType, node_field

UNKNOWN_ITEMS = 1
"""What a MAP over a list without `maxItems` counts as (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class RunBounds:
    """The most child runs and node runs one run of a graph makes, and why: the fan-out nodes
    along its costliest nesting, outermost first, each with its factor."""

    child_runs: int
    node_runs: int
    chain: tuple[tuple[str, str, int], ...] = ()
    """(node type, node id, factor) from the outermost fan-out in."""

    def explain(self) -> str:
        """`LOOP 'outer' (10,000 iterations) × MAP 'mid' (499,000 items)`."""
        unit = {NodeType.LOOP: "iterations", NodeType.MAP: "items", NodeType.SUBGRAPH: "run"}
        return " × ".join(
            f"{kind} '{node}' ({factor:,} {unit.get(NodeType(kind), '')})" for kind, node, factor in self.chain
        )


def run_bounds(graph: GraphDef) -> RunBounds:
    """The bounds of one run of `graph`, its inline bodies (and embedded graph files) included."""
    child_runs = 0
    node_runs = 0
    chain: tuple[tuple[str, str, int], ...] = ()
    worst = -1
    for node in graph.nodes:
        node_runs += 1
        if node.type not in (NodeType.SUBGRAPH, NodeType.MAP, NodeType.LOOP):
            continue
        body = node_field(node, "body", None)
        inner = run_bounds(GraphDef.model_validate(body)) if isinstance(body, dict) else RunBounds(0, 1)
        times = _factor(graph, node)
        child_runs += times * (1 + inner.child_runs)
        node_runs += times * inner.node_runs
        if times * (1 + inner.child_runs) > worst:
            worst = times * (1 + inner.child_runs)
            chain = ((str(node.type), node.id, times), *inner.chain)
    return RunBounds(child_runs, node_runs, chain)


def _factor(graph: GraphDef, node: NodeBase) -> int:
    """Child runs per activation: one for a SUBGRAPH, `max_iterations` for a LOOP, the list's
    declared `maxItems` for a MAP."""
    if node.type == NodeType.LOOP:
        return int(node_field(node, "max_iterations", 1))
    if node.type == NodeType.SUBGRAPH:
        return 1
    path = split_path(str(node_field(node, "items", "")))
    declared = [n for schema in _schemas_of(graph, path[0]) if (n := _max_items(schema, path[1:])) is not None]
    return min(declared) if declared else UNKNOWN_ITEMS


def _schemas_of(graph: GraphDef, head: Any) -> Iterator[Any]:
    """The schemas the value at `head` (`input`, or a node id) is checked against."""
    if head == "input":
        if graph.input_schema:
            yield graph.input_schema
        return
    registry = {entry.id: entry.schema_ for entry in graph.schemas}
    for edge in graph.edges:
        if edge.source_node_id == head and edge.schema_id in registry:
            yield registry[edge.schema_id]


def _max_items(schema: Any, path: tuple[Any, ...]) -> int | None:
    """`maxItems` of the part of `schema` at `path` (None when the schema does not say)."""
    schema = schema_at(schema, path)
    if not isinstance(schema, dict):
        return None
    bound = schema.get("maxItems")
    return bound if isinstance(bound, int) and not isinstance(bound, bool) and bound >= 0 else None
