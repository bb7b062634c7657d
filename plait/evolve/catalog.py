"""The list of stored graphs as people read it: the latest version of each, and which forks'
parents have moved on since the fork (`plait graphs list`, `GET /api/graphs`)."""

from __future__ import annotations

from dataclasses import dataclass

from plait.store import GraphListing, NotFoundError, Store, StoredGraph


@dataclass(frozen=True, slots=True)
class GraphSummary:
    """A listed graph, and whether a newer version of its parent can be merged into it."""

    listed: GraphListing
    parent_updated: bool
    """A fork whose parent has a version newer than the one it was forked from."""


def list_graphs(store: Store, *, source_type: str | None = None) -> list[GraphSummary]:
    """Live graphs by slug, optionally of one source type (StoreError for an unknown type)."""
    graphs = store.graphs.list(source_type=source_type)
    everything = graphs if source_type is None else store.graphs.list()
    latest = {g.graph_id: g.version for g in everything}
    return [GraphSummary(g, _parent_updated(g.parent_def_id, g.parent_def_ver_at_fork, latest)) for g in graphs]


def parent_updated(store: Store, graph: StoredGraph) -> bool:
    """For one graph what `list_graphs` says of each: a fork whose live parent has a newer
    version than the one it was forked from (reads the parent only)."""
    parent = graph.graph.parent_def_id
    if parent is None or graph.deleted_at is not None:  # as listed: live graphs only
        return False
    try:
        now = store.graphs.get(parent)
    except NotFoundError:
        return False
    latest = {} if now.deleted_at is not None else {now.graph_id: now.version}
    return _parent_updated(parent, graph.graph.parent_def_ver_at_fork, latest)


def _parent_updated(parent: str | None, at_fork: int | None, latest: dict[str, int]) -> bool:
    return parent is not None and at_fork is not None and latest.get(parent, at_fork) > at_fork
