"""What every compiler pass sees: the loaded graph, its topology, indexes, and the diagnostic sink."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from plait.compile.diagnostics import Category, Diagnostic, Severity
from plait.compile.load import LoadedGraph
from plait.compile.schemas import object_form
from plait.compile.source import Path_
from plait.compile.topology import Topology
from plait.model.graph import END, EdgeDef, GraphDef, SchemaEntry
from plait.model.nodes import NodeBase

VersionsFor = Callable[[GraphDef], Mapping[str, str]]
"""The version each schema entry of a graph would be stored at, by schema id (see
`CheckContext.versions`)."""


@dataclass
class CheckContext:
    """What every compiler pass is given, and where it reports.

    - `build` indexes the loaded graph once, before the passes run. `nodes` holds the nodes that
      validated (the first of each id); `topo`, `in_edges` and `out_edges` also cover the ids of
      nodes that failed validation, so one bad node does not make its neighbours look
      unconnected. Only edges between known nodes are indexed; an edge to `END` is in
      `out_edges` only. `schemas` holds the first entry of each schema id.
    - Passes read the indexes and do not change them. They add problems only through `report`,
      which positions each one (a data path's line first, else the node's or the edge's) and
      files it under `errors` or `warnings`.
    """

    loaded: LoadedGraph
    topo: Topology
    nodes: dict[str, NodeBase] = field(default_factory=dict)
    out_edges: dict[str, list[EdgeDef]] = field(default_factory=dict)
    in_edges: dict[str, list[EdgeDef]] = field(default_factory=dict)
    schemas: dict[str, SchemaEntry] = field(default_factory=dict)
    errors: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)
    versions: VersionsFor | None = None
    """When the graph is compiled to be stored: the version the store gives each schema entry. The
    store derives it from what changed since the stored version, and a file's `version` is only a
    floor, so a migration may target the version an import reported while the file still says
    less. Asked only when a migration goes past its entry's written version."""

    @property
    def graph(self) -> GraphDef:
        return self.loaded.graph

    @cached_property
    def stored_versions(self) -> Mapping[str, str]:
        """`versions` of this graph, worked out once (empty when nothing is being stored)."""
        return self.versions(self.graph) if self.versions is not None else {}

    @classmethod
    def build(cls, loaded: LoadedGraph, *, versions: VersionsFor | None = None) -> CheckContext:
        graph = loaded.graph
        nodes: dict[str, NodeBase] = {}
        for node in graph.nodes:
            nodes.setdefault(node.id, node)
        # Nodes that failed validation still take part in the structure, so that one bad
        # node does not make its neighbours look unreachable or their references unknown.
        all_ids = [*nodes, *(i for i in sorted(loaded.invalid_node_ids) if i not in nodes)]
        known = set(all_ids)
        edges = [e for e in graph.edges if e.source_node_id in known and e.target_node_id in known]
        topo = Topology.build(all_ids, [(e.source_node_id, e.target_node_id) for e in edges])
        ctx = cls(loaded=loaded, topo=topo, nodes=nodes, versions=versions)
        ctx.out_edges = {n: [] for n in all_ids}
        ctx.in_edges = {n: [] for n in all_ids}
        for edge in edges:
            ctx.out_edges[edge.source_node_id].append(edge)
            ctx.in_edges[edge.target_node_id].append(edge)
        for edge in graph.edges:  # output contracts: they type the result, not a successor
            if edge.target_node_id == END and edge.source_node_id in known:
                ctx.out_edges[edge.source_node_id].append(edge)
        for entry in graph.schemas:
            ctx.schemas.setdefault(entry.id, entry)
        return ctx

    def report(
        self,
        category: Category,
        code: str,
        message: str,
        *,
        node_id: str | None = None,
        edge_id: str | None = None,
        path: Path_ | None = None,
        hint: str | None = None,
        warning: bool = False,
    ) -> None:
        """Record a problem; `path` (file data path) wins over the node/edge line for positioning."""
        if path is not None:
            line = self.loaded.line(path)
        elif node_id is not None and node_id in self.loaded.node_paths:
            line = self.loaded.node_line(node_id)
        elif edge_id is not None:
            line = self.loaded.edge_line(edge_id)
        else:
            line = None
        diag = Diagnostic(
            category,
            code,
            message,
            node_id=node_id,
            edge_id=edge_id,
            file=self.loaded.doc.file,
            line=line,
            hint=hint,
            severity=Severity.WARNING if warning else Severity.ERROR,
        )
        (self.warnings if warning else self.errors).append(diag)

    @cached_property
    def broken_edge_ends(self) -> set[str]:
        """Nodes at an edge that is dangling or failed validation (and the node a dangling name is
        closest to, which that error suggests). Their connections are unknown until the edge is
        fixed, so connectivity errors (unconnected, not upstream) are not reported for them."""
        known = set(self.topo.order)
        items = self.loaded.doc.data.get("edges") if isinstance(self.loaded.doc.data, dict) else None
        if items is not None and not isinstance(items, list):
            return known  # the whole `edges:` section is reported as malformed
        valid = {(e.source_node_id, e.target_node_id) for e in self.graph.edges}
        ends: set[str] = set()
        for item in items or []:
            if not isinstance(item, dict):
                continue
            source = item.get("source", item.get("source_node_id"))
            target = item.get("target", item.get("target_node_id"))
            if (source, target) in valid and source in known and (target in known or target == END):
                continue
            # any value may be an endpoint: a misspelt key (`targt: b`) still names its node
            for name in item.values():
                if isinstance(name, str) and name != END:
                    ends.add(name)
                    ends.update(difflib.get_close_matches(name, list(self.nodes), n=1))
        return ends

    def node_path(self, node_id: str, *rest: str | int) -> Path_ | None:
        base = self.loaded.node_paths.get(node_id)
        return (*base, *rest) if base is not None else None

    def edge_path(self, edge_id: str | None, *rest: str | int) -> Path_ | None:
        base = self.loaded.edge_paths.get(edge_id or "")
        return (*base, *rest) if base is not None else None

    def out_schemas(self, node_id: str) -> list[dict[str, Any]]:
        """The JSON Schemas bound to a node's out-edges (its output must satisfy all of them)."""
        found: list[dict[str, Any]] = []
        seen: set[str] = set()
        for edge in self.out_edges.get(node_id, []):
            if edge.schema_id and edge.schema_id not in seen and edge.schema_id in self.schemas:
                seen.add(edge.schema_id)
                found.append(object_form(self.schemas[edge.schema_id].schema_))
        return found
