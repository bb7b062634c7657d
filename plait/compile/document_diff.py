"""What a proposed graph document changes against the one it started from, item by item.

A person accepts or rejects a proposed edit by reading this: which nodes, edges and schemas are
added, removed or changed (and which fields of a changed one), and which graph fields changed.
It compares documents as written, so it works on drafts that do not validate yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_GRAPH_FIELDS = ("name", "description", "input_schema", "input_freeze", "max_cost_usd", "migrations")


@dataclass(frozen=True, slots=True)
class ItemChanges:
    """The ids added and removed, and each changed id with the fields that differ."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"added": self.added, "removed": self.removed, "changed": self.changed}

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


@dataclass(frozen=True, slots=True)
class DocumentDiff:
    """Nodes, edges (named `source->target`) and schemas, and the graph fields that changed."""

    nodes: ItemChanges
    edges: ItemChanges
    schemas: ItemChanges
    graph: list[str]

    @property
    def empty(self) -> bool:
        return self.nodes.empty and self.edges.empty and self.schemas.empty and not self.graph

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes.to_json(),
            "edges": self.edges.to_json(),
            "schemas": self.schemas.to_json(),
            "graph": self.graph,
        }

    def lines(self) -> list[str]:
        """One line per change, `+`, `-` or `~` first, for a terminal or a chat message."""
        out: list[str] = []
        for kind, items in (("node", self.nodes), ("edge", self.edges), ("schema", self.schemas)):
            out += [f"+ {kind} {i}" for i in items.added]
            out += [f"- {kind} {i}" for i in items.removed]
            out += [f"~ {kind} {i}: {', '.join(fields)}" for i, fields in items.changed.items()]
        out += [f"~ graph {name}" for name in self.graph]
        return out


def diff_documents(base: dict[str, Any] | None, draft: dict[str, Any]) -> DocumentDiff:
    """What `draft` changes against `base` (None: a new graph, everything is added)."""
    base = base or {}
    return DocumentDiff(
        nodes=_items(_by_id(base.get("nodes")), _by_id(draft.get("nodes"))),
        edges=_items(_edges(base.get("edges")), _edges(draft.get("edges"))),
        schemas=_items(_by_id(base.get("schemas")), _by_id(draft.get("schemas"))),
        graph=[name for name in _GRAPH_FIELDS if base.get(name) != draft.get(name)],
    )


def _by_id(entries: Any) -> dict[str, dict[str, Any]]:
    items = entries if isinstance(entries, list) else []
    return {e["id"]: e for e in items if isinstance(e, dict) and isinstance(e.get("id"), str)}


def _edges(entries: Any) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for edge in entries if isinstance(entries, list) else []:
        if isinstance(edge, dict):
            source = edge.get("source", edge.get("source_node_id"))
            target = edge.get("target", edge.get("target_node_id"))
            found[f"{source}->{target}"] = {k: v for k, v in edge.items() if k not in _EDGE_ENDS}
    return found


_EDGE_ENDS = frozenset({"source", "target", "source_node_id", "target_node_id", "id"})


def _items(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> ItemChanges:
    changed = {}
    for key in before.keys() & after.keys():
        fields = sorted(k for k in before[key].keys() | after[key].keys() if before[key].get(k) != after[key].get(k))
        if fields:
            changed[key] = fields
    return ItemChanges(
        added=[k for k in after if k not in before],
        removed=[k for k in before if k not in after],
        changed=dict(sorted(changed.items())),
    )
