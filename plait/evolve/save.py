"""Saving a graph with its schema versions derived from what changed.

Every path that stores a graph (a run of a file, `plait graphs import`, a fork's merge, the
system-graph sync) goes through `save_graph`: the new schema registry is compared with the
latest stored version's, each changed entry gets the version its change calls for (unless
the author wrote a higher one), the graph's `schema_version` is bumped by the highest level,
and the classification comes back with the stored graph so the caller can report it, with the
stored outputs a raised major leaves without a migration (`plait.evolve.left_behind`).

The store is the one source of a schema's version: what a file or an upload writes as an
entry's `version` is a floor, which the store raises by what changed, and the save reports the
result. So a migration is checked against the version the store gives its schema
(`versions_on_save`, which compiling for a save uses), and one written against the version a
save reported is accepted although the file still says less.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plait.evolve.classify import Level, RegistryChange, classify_registry, derive_schema_version, with_derived_versions
from plait.model import GraphDef
from plait.model.enums import SourceType
from plait.store import Store, StoredGraph, StoreError
from plait.store.graph_admin import ReadOnlyGraph
from plait.store.graphs import content_hash, graph_content

if TYPE_CHECKING:
    from plait.evolve.left_behind import LeftBehind


@dataclass(frozen=True, slots=True)
class Saved:
    """A saved graph version and how its schema registry changed; `warnings` say where the
    author's declared versions or `breaking_change` flags disagree with the changes found."""

    stored: StoredGraph
    change: RegistryChange
    """How the schema registry changed against the previous version (all `added` on a first save)."""
    left_behind: tuple[LeftBehind, ...] = ()
    """Stored outputs of the graph's runs that a raised major leaves without a migration."""

    @property
    def warnings(self) -> list[str]:
        return [*self.change.warnings, *(lb.warning() for lb in self.left_behind)]


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
    left_behind: tuple[LeftBehind, ...] = ()
    """Stored outputs the save would leave without a migration (see `Saved.left_behind`)."""

    @property
    def warnings(self) -> list[str]:
        return [*self.change.warnings, *(lb.warning() for lb in self.left_behind)]


def save_graph(
    store: Store, graph: GraphDef, *, source_type: str | None = None, base_version: int | None = None
) -> Saved:
    """Store `graph` (a new version only when something changed) with derived schema versions;
    with `base_version`, only if that is still the latest version (else `StaleVersion`)."""
    previous, change, derived = _derive(store, graph)
    stored = store.graphs.save(derived, source_type=source_type, base_version=base_version)
    behind = (
        _left_behind(store, stored.graph_id, stored.graph, change) if stored.created and previous is not None else ()
    )
    return Saved(stored, change, behind)


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
    behind = _left_behind(store, previous.graph_id, derived, change) if previous is not None and not unchanged else ()
    return SavePreview(change, derived.schema_version or "", latest, unchanged, behind)


def versions_on_save(store: Store) -> Callable[[GraphDef], dict[str, str]]:
    """For compiling a graph that is to be stored in `store` (`compile_file(versions=...)`): the
    version each of its schema entries would be stored at, which its migrations are checked against."""

    def versions(graph: GraphDef) -> dict[str, str]:
        return {entry.id: entry.version for entry in _derive(store, graph)[2].schemas}

    return versions


def _left_behind(store: Store, graph_id: str, graph: GraphDef, change: RegistryChange) -> tuple[LeftBehind, ...]:
    """Only a raised major can leave stored outputs behind; the check (and its schema validation
    and migration planning) is loaded only then."""
    if change.level is not Level.MAJOR:
        return ()
    from plait.evolve.left_behind import left_behind

    return left_behind(store, graph_id, graph, change)


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
        update={
            "schemas": with_derived_versions(graph.schemas, change),
            "schema_version": schema_version,
            **_lineage_kept(previous, graph),
        }
    )
    return previous, change, derived


def _lineage_kept(previous: StoredGraph | None, graph: GraphDef) -> dict[str, Any]:
    """A fork stays a fork: a new version whose file says nothing of a parent (written by hand,
    or from before the fork) keeps the stored link to it, so a diff and a merge still find it.
    A file that names a parent says what it says."""
    if previous is None or graph.parent_def_id is not None or previous.graph.parent_def_id is None:
        return {}
    kept = previous.graph
    return {
        "parent_def_id": kept.parent_def_id,
        "parent_def_ver_at_fork": kept.parent_def_ver_at_fork,
        "parent_schema_ver_at_fork": kept.parent_schema_ver_at_fork,
    }
