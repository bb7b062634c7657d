"""The graph side of the client: what it accepts as a graph, and saving, exporting, merging."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from plait.errors import PlaitError, Refusal

if TYPE_CHECKING:
    from plait.compile.builder import GraphBuilder
    from plait.model import GraphDef
    from plait.runs.promote import Promotions
    from plait.store import Store, StoredGraph
    from plait.store.evaluations import Promotion

GraphSource = Union[str, "os.PathLike[str]", "GraphDef", "GraphBuilder", dict[str, Any]]
"""A stored graph's id or slug, a graph file, a `GraphDef`, a `GraphBuilder` or a graph's data."""


@dataclass(frozen=True, slots=True)
class SavedGraph:
    """A graph as saved: its id, slug and version; `created` when the save stored a new version;
    `warnings` where declared schema versions disagree with the changes found."""

    graph_id: str
    slug: str
    version: int
    created: bool
    warnings: tuple[str, ...]
    stored: StoredGraph


def save(store: Store, graph: GraphSource) -> SavedGraph:
    """Store `graph` (a file by its path, anything else by its content)."""
    if isinstance(graph, (str, os.PathLike)):
        from plait.evolve.files import save_file

        saved_file = save_file(store, graph)
        return _saved(saved_file.stored, saved_file.warnings)
    from plait.evolve.upload import UploadMode, save_upload

    saved = save_upload(store, _data(graph), mode=UploadMode.IMPORT)
    return _saved(saved.stored, saved.warnings)


def reference(store: Store, graph: GraphSource) -> str:
    """What a run is started from: a stored id or slug, or a file path, as given; anything else
    is saved first (a new version only when it changed) and named by its id."""
    if isinstance(graph, str):
        return graph
    if isinstance(graph, os.PathLike):
        return str(Path(graph))
    return save(store, graph).graph_id


def versions(store: Store, ref: str) -> list[Any]:
    return store.graph_admin.versions(store.graphs.get(ref).graph_id)


def export(store: Store, ref: str, version: int | None, *, as_json: bool) -> str:
    import json

    from plait.compile.dump import dump_yaml, graph_to_data

    stored = store.graphs.get(ref, version)
    if as_json:
        return json.dumps(graph_to_data(stored.graph), indent=2, ensure_ascii=False) + "\n"
    return dump_yaml(stored.graph)


def delete(store: Store, ref: str, *, force: bool) -> Any:
    stored = store.graphs.live(ref)
    return store.graph_admin.delete(stored.graph_id, stored.slug, stored.source_type, force=force)


def promote(store: Store, ref: str, version: int, *, gate: str | None, force: bool, note: str | None) -> Promotion:
    from plait.runs.promote import promote as promote_version

    return promote_version(store, ref, version, gate=gate, force=force, note=note, by="python")


def promotions(store: Store, ref: str) -> Promotions:
    from plait.runs.promote import promotions as of_graph

    return of_graph(store, ref)


def merge(store: Store, ref: str, keys: list[str], *, refork: bool) -> StoredGraph:
    from plait.evolve.fork import merge_from_parent
    from plait.evolve.fork import refork as do_refork

    if refork == bool(keys):
        raise PlaitError(
            "give the parent's changes to take (keys) or refork=True, not both",
            "keys are NODE_ID, schema:ID, edge:ID or migration:ID (client.fork_diff lists them)",
            kind=Refusal.INVALID,
        )
    return do_refork(store, ref) if refork else merge_from_parent(store, ref, keys)


def _data(graph: GraphDef | GraphBuilder | dict[str, Any]) -> dict[str, Any]:
    from plait.compile.builder import GraphBuilder
    from plait.model import GraphDef

    if isinstance(graph, GraphBuilder):
        return graph.data()
    if isinstance(graph, GraphDef):
        from plait.compile.dump import graph_to_data

        return graph_to_data(graph)
    return graph


def _saved(stored: StoredGraph, warnings: list[str]) -> SavedGraph:
    return SavedGraph(stored.graph_id, stored.slug, stored.version, stored.created, tuple(warnings), stored)
