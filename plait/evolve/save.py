"""Saving a graph with its schema versions derived from what changed.

Every path that stores a graph (a run of a file, `plait graphs import`, a fork's merge, the
system-graph sync) goes through `save_graph`: the new schema registry is compared with the
latest stored version's, each changed entry gets the version its change calls for (unless
the author wrote a higher one), the graph's `schema_version` is bumped by the highest level,
and the classification comes back with the stored graph so the caller can report it.
"""

from __future__ import annotations

from dataclasses import dataclass

from plait.evolve.classify import RegistryChange, classify_registry, derive_schema_version, with_derived_versions
from plait.model import GraphDef
from plait.store import Store, StoredGraph, StoreError


@dataclass(frozen=True, slots=True)
class Saved:
    """A saved graph version and how its schema registry changed; `warnings` say where the
    author's declared versions or `breaking_change` flags disagree with the changes found."""

    stored: StoredGraph
    change: RegistryChange
    """How the schema registry changed against the previous version (all `added` on a first save)."""

    @property
    def warnings(self) -> list[str]:
        return self.change.warnings


def save_graph(store: Store, graph: GraphDef, *, source_type: str | None = None) -> Saved:
    """Store `graph` (a new version only when something changed) with derived schema versions."""
    try:
        previous: StoredGraph | None = store.graphs.get(graph.id)
    except StoreError:
        previous = None
    change = classify_registry(previous.graph.schemas if previous else [], graph.schemas)
    schema_version = derive_schema_version(
        previous.schema_version if previous else None, change, declared=graph.schema_version
    )
    derived = graph.model_copy(
        update={"schemas": with_derived_versions(graph.schemas, change), "schema_version": schema_version}
    )
    return Saved(store.graphs.save(derived, source_type=source_type), change)
