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
from plait.model.enums import SourceType
from plait.store import Store, StoredGraph, StoreError
from plait.store.graph_admin import ReadOnlyGraph
from plait.store.graphs import content_hash, graph_content


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


@dataclass(frozen=True, slots=True)
class SavePreview:
    """What saving a graph would store, worked out without storing it: how its schema registry
    changes, the `schema_version` it would get, and whether anything changed at all."""

    change: RegistryChange
    schema_version: str
    latest_version: int | None
    """The version stored now (None: the graph is new)."""
    unchanged: bool
    """The content equals the latest version's: saving stores nothing new."""


def save_graph(
    store: Store, graph: GraphDef, *, source_type: str | None = None, base_version: int | None = None
) -> Saved:
    """Store `graph` (a new version only when something changed) with derived schema versions;
    with `base_version`, only if that is still the latest version (else `StaleVersion`)."""
    _, change, derived = _derive(store, graph)
    return Saved(store.graphs.save(derived, source_type=source_type, base_version=base_version), change)


def preview_save(store: Store, graph: GraphDef) -> SavePreview:
    """What `save_graph(store, graph)` would store now; nothing is written. A system graph is
    refused as its save would be: it is read-only."""
    previous, change, derived = _derive(store, graph)
    if previous is not None and previous.source_type == SourceType.SYSTEM:
        raise ReadOnlyGraph.changing(previous.slug)
    unchanged = previous is not None and content_hash(graph_content(derived)) == content_hash(
        graph_content(previous.graph)
    )
    latest = previous.version if previous is not None else None
    return SavePreview(change, derived.schema_version or "", latest, unchanged)


def _derive(store: Store, graph: GraphDef) -> tuple[StoredGraph | None, RegistryChange, GraphDef]:
    """The latest stored version, how `graph`'s registry differs from it, and `graph` with the
    schema versions that difference calls for."""
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
    return previous, change, derived
