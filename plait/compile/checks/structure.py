"""Structural passes: ids, edges, cycles, entry/exit, CONDITION and MERGE wiring."""

from __future__ import annotations

import difflib
from collections import Counter

from plait.compile.context import CheckContext
from plait.compile.diagnostics import Category
from plait.model.graph import END
from plait.model.nodes import NodeBase, NodeType, node_field

CONFIG, PLANNING = Category.CONFIG, Category.PLANNING


def check_duplicates(ctx: CheckContext) -> None:
    """Node, edge and schema ids are unique within their sections, and no node takes the reserved exit id `END`."""
    graph = ctx.graph
    for node in graph.nodes:
        if node.id == END:
            ctx.report(
                CONFIG,
                "reserved_id",
                f"'{END}' is reserved for the virtual exit",
                node_id=node.id,
                path=ctx.node_path(node.id, "id"),
                hint="rename the node",
            )
    sections = (
        ("nodes", [n.id for n in graph.nodes]),
        ("edges", [e.id or "" for e in graph.edges]),
        ("schemas", [s.id for s in graph.schemas]),
    )
    for section, ids in sections:
        seen: set[str] = set()
        for index, item_id in enumerate(ids):
            if item_id in seen:
                kind = section.rstrip("s")
                ctx.report(
                    CONFIG,
                    "duplicate_id",
                    f"duplicate {kind} id '{item_id}'",
                    node_id=item_id if section == "nodes" else None,
                    edge_id=item_id if section == "edges" else None,
                    path=_item_path(ctx, section, index),
                    hint=f"every {kind} needs its own id; rename one",
                )
            seen.add(item_id)


def _item_path(ctx: CheckContext, section: str, index: int) -> tuple[str | int, ...]:
    if section == "schemas" and "schemas" not in ctx.loaded.doc.data and "schema_registry" in ctx.loaded.doc.data:
        return ("schema_registry", index, "id")
    return (section, index, "id")


def check_edges(ctx: CheckContext) -> None:
    """Both ends of every edge name nodes of the graph (a target may be `END`), and no edge joins a node to itself."""
    known = set(ctx.nodes)
    for edge in ctx.graph.edges:
        for end, node_id in (("source", edge.source_node_id), ("target", edge.target_node_id)):
            if node_id in known or node_id in ctx.loaded.invalid_node_ids or (end == "target" and node_id == END):
                continue
            close = difflib.get_close_matches(node_id, list(known), n=1)
            ctx.report(
                PLANNING,
                "dangling_edge",
                f"edge {end} '{node_id}' is not a node of this graph",
                edge_id=edge.id,
                path=ctx.edge_path(edge.id, end if _has(ctx, edge.id, end) else f"{end}_node_id"),
                hint=f"did you mean '{close[0]}'?" if close else "add that node or fix the edge",
            )
        if edge.source_node_id == edge.target_node_id and edge.source_node_id in known:
            ctx.report(
                PLANNING,
                "cycle",
                f"edge connects '{edge.source_node_id}' to itself",
                edge_id=edge.id,
                node_id=edge.source_node_id,
                path=ctx.edge_path(edge.id),
                hint="use a LOOP node to repeat work; prompt graphs are acyclic",
            )


def _has(ctx: CheckContext, edge_id: str | None, key: str) -> bool:
    path = ctx.edge_path(edge_id)
    if path is None:
        return False
    item = ctx.loaded.doc.data[path[0]][path[1]]
    return isinstance(item, dict) and key in item


def check_topology(ctx: CheckContext) -> None:
    """The graph has nodes, no cycle and an entry node; no node is reachable only through a cycle,
    and none stands unconnected unless an edge to `END` declares its output."""
    topo = ctx.topo
    if not ctx.nodes:
        if not ctx.loaded.invalid_node_ids:
            ctx.report(
                PLANNING,
                "no_entry",
                "the graph has no nodes",
                path=("nodes",),
                hint="add at least one node under `nodes:`",
            )
        return
    on_cycle: set[str] = set()
    for cycle in topo.find_cycles():
        if len(cycle) == 1:
            on_cycle.update(cycle)
            continue  # self-loops are reported by check_edges
        on_cycle.update(cycle)
        # Point at the edge that closes the cycle (the one to remove, usually), not at a node.
        closing = next((e.id for e in ctx.out_edges[cycle[-1]] if e.target_node_id == cycle[0]), None)
        ctx.report(
            PLANNING,
            "cycle",
            "cycle: " + " → ".join([*cycle, cycle[0]]),
            node_id=cycle[0],
            edge_id=closing,
            path=ctx.edge_path(closing),
            hint="remove one of these edges; use a LOOP node for repetition",
        )
    if not topo.entries:
        ctx.report(
            PLANNING,
            "no_entry",
            "no entry node: every node has an incoming edge",
            path=("nodes",),
            hint="an entry node is one with no incoming edge; break the cycle",
        )
    for node_id in topo.cyclic:
        if node_id not in on_cycle and node_id in ctx.nodes:
            ctx.report(
                PLANNING,
                "unreachable",
                f"node '{node_id}' can only be reached through a cycle",
                node_id=node_id,
                hint="fix the cycle upstream of it",
            )
    if len(ctx.nodes) > 1:
        for node_id in ctx.nodes:
            declares_output = any(e.target_node_id == END for e in ctx.out_edges[node_id])
            if (
                not topo.preds[node_id]
                and not topo.succs[node_id]
                and not declares_output  # an independent branch with a typed output is intended
                and node_id not in ctx.broken_edge_ends
            ):
                ctx.report(
                    PLANNING,
                    "unreachable",
                    f"node '{node_id}' is not connected to any other node",
                    node_id=node_id,
                    hint="connect it with an edge, or remove it",
                )


def _choices(node: NodeBase) -> list[str] | None:
    """The keys a model may answer for a CONDITION decided by a model (None for an expression)."""
    decided_by = node_field(node, "condition_llm", None)
    return None if decided_by is None else list(decided_by.choices)


def check_branching(ctx: CheckContext) -> None:
    """Edges leaving a CONDITION carry a `condition_key`, and it has some (a warning); other
    edges carry none (a warning); a MERGE has at least two in-edges (a warning)."""
    for node_id, node in ctx.nodes.items():
        outs = ctx.out_edges[node_id]
        if node.type == NodeType.CONDITION:
            if not outs:
                ctx.report(
                    PLANNING,
                    "condition_without_branches",
                    f"CONDITION '{node_id}' has no out-edges",
                    node_id=node_id,
                    hint="add edges with `condition_key:` for each outcome",
                    warning=True,
                )
            choices = _choices(node)
            for edge in outs:
                if edge.condition_key is not None and choices is not None and edge.condition_key not in choices:
                    ctx.report(
                        PLANNING,
                        "condition_key_not_a_choice",
                        f"edge from CONDITION '{node_id}' to '{edge.target_node_id}' has condition_key "
                        f"{edge.condition_key!r}, which is not one of its condition_llm choices",
                        edge_id=edge.id,
                        node_id=node_id,
                        path=ctx.edge_path(edge.id, "condition_key"),
                        hint=f"use one of {', '.join(choices)}, or add {edge.condition_key!r} to the choices",
                    )
                if edge.condition_key is None and not edge.default:
                    ctx.report(
                        PLANNING,
                        "missing_condition_key",
                        f"edge from CONDITION '{node_id}' to '{edge.target_node_id}' has no condition_key",
                        edge_id=edge.id,
                        node_id=node_id,
                        path=ctx.edge_path(edge.id),
                        hint="add `condition_key:` with the value of condition_expr that selects this branch, "
                        "or `default: true` to take it when no key matches",
                    )
            defaults = [e for e in outs if e.default]
            for extra in defaults[1:]:
                ctx.report(
                    PLANNING,
                    "several_default_branches",
                    f"CONDITION '{node_id}' has more than one default branch (edges to "
                    f"{', '.join(repr(e.target_node_id) for e in defaults)})",
                    edge_id=extra.id,
                    node_id=node_id,
                    path=ctx.edge_path(extra.id, "default"),
                    hint="keep `default: true` on one edge; give the others a `condition_key`",
                )
        else:
            for edge in outs:
                if edge.condition_key is not None:
                    ctx.report(
                        PLANNING,
                        "condition_key_ignored",
                        f"condition_key on an edge from {node.type} node '{node_id}' has no effect",
                        edge_id=edge.id,
                        path=ctx.edge_path(edge.id, "condition_key"),
                        hint="only edges leaving a CONDITION node are selected by key",
                        warning=True,
                    )
                if edge.default:
                    ctx.report(
                        PLANNING,
                        "default_branch_ignored",
                        f"`default: true` on an edge from {node.type} node '{node_id}' has no effect",
                        edge_id=edge.id,
                        path=ctx.edge_path(edge.id, "default"),
                        hint="only an edge leaving a CONDITION node can be its default branch",
                        warning=True,
                    )
        if node.type == NodeType.MERGE and len(ctx.in_edges[node_id]) < 2:
            ctx.report(
                PLANNING,
                "merge_single_input",
                f"MERGE '{node_id}' has fewer than two incoming edges",
                node_id=node_id,
                hint="a MERGE joins parallel branches; connect them or remove it",
                warning=True,
            )


def check_edge_schemas(ctx: CheckContext) -> None:
    """Every edge's `schema_id` names an entry of `schemas:`."""
    for edge in ctx.graph.edges:
        if (
            edge.schema_id is not None
            and edge.schema_id not in ctx.schemas
            and edge.schema_id not in ctx.loaded.invalid_schema_ids
        ):
            close = difflib.get_close_matches(edge.schema_id, list(ctx.schemas), n=1)
            ctx.report(
                CONFIG,
                "unknown_schema",
                f"edge schema_id '{edge.schema_id}' is not in the schema registry",
                edge_id=edge.id,
                path=ctx.edge_path(edge.id, "schema_id"),
                hint=f"did you mean '{close[0]}'?" if close else "add it under `schemas:`",
            )


def check_duplicate_members(ctx: CheckContext) -> None:
    """Tool names and param names must be unique within their node."""
    for node_id, node in ctx.nodes.items():
        for field_name, names in (
            ("tools", [t.name for t in node_field(node, "tools", [])]),
            ("params", [p.name for p in node_field(node, "params", [])]),
        ):
            for name, count in Counter(names).items():
                if count > 1:
                    ctx.report(
                        CONFIG,
                        "duplicate_id",
                        f"{field_name[:-1]} '{name}' is defined {count} times",
                        node_id=node_id,
                        path=ctx.node_path(node_id, field_name),
                        hint=f"give each {field_name[:-1]} its own name",
                    )
