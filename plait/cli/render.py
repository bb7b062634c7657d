"""Readable views of a graph for the terminal (Rich) and for scripts (JSON)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from plait.compile.topology import Topology
from plait.model.graph import EdgeDef, GraphDef

TYPE_STYLES = {
    "LLM_CALL": "bold cyan",
    "CONDITION": "bold yellow",
    "MERGE": "bold magenta",
    "TRANSFORM": "bold green",
    "HUMAN_REVIEW": "bold red",
}


def graph_json(graph: GraphDef, topo: Topology) -> dict[str, Any]:
    """The graph as JSON for scripts: its id and name, entries, exits, Kahn levels, nodes and edges."""
    return {
        "id": graph.id,
        "name": graph.display_name,
        "entries": topo.entries,
        "exits": topo.exits,
        "levels": topo.levels,
        "nodes": [{"id": n.id, "type": str(n.type), "label": n.label} for n in graph.nodes],
        "edges": [
            {
                "id": e.id,
                "source": e.source_node_id,
                "target": e.target_node_id,
                "schema_id": e.schema_id,
                "condition_key": e.condition_key,
                "label": e.label,
            }
            for e in graph.edges
        ],
    }


def render_graph(graph: GraphDef, topo: Topology, console: Console | None = None) -> None:
    """Print the graph as a tree, level by level, each node with the edges leaving it."""
    console = console or Console(highlight=False)
    nodes = {n.id: n for n in graph.nodes}
    outs: dict[str, list[EdgeDef]] = {n: [] for n in nodes}
    for edge in graph.edges:
        outs[edge.source_node_id].append(edge)

    title = Text.assemble((graph.display_name, "bold"), f"  ({graph.id}: {len(nodes)} nodes, {len(graph.edges)} edges)")
    tree = Tree(title)
    tree.add(Text.assemble(("entry ", "dim"), ", ".join(topo.entries), ("   exit ", "dim"), ", ".join(topo.exits)))
    for depth, level in enumerate(topo.levels):
        branch = tree.add(Text(f"level {depth}", style="dim"))
        for node_id in level:
            node = nodes[node_id]
            kind = str(node.type)
            label = Text.assemble((node_id, "bold"), "  ", (kind, TYPE_STYLES.get(kind, "bold blue")))
            if node.label:
                label.append(f"  {node.label}", style="italic")
            leaf = branch.add(label)
            for edge in outs[node_id]:
                leaf.add(_edge_text(edge))
    console.print(tree)


def _edge_text(edge: EdgeDef) -> Text:
    text = Text.assemble("→ ", (edge.target_node_id, "bold"))
    if edge.condition_key is not None:
        text.append(f"  when {edge.condition_key!r}", style="yellow")
    text.append(
        f"  [{edge.schema_id}]" if edge.schema_id else "  [free text]", style="green" if edge.schema_id else "dim"
    )
    if edge.label:
        text.append(f"  {edge.label}", style="italic dim")
    return text
