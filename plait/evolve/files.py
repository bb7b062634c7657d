"""Storing graph files: validated, SKILL-expanded, saved as a new immutable version when changed."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from plait.caches import ByteBoundCache
from plait.compile import GraphInvalid, compile_file
from plait.evolve.classify import RegistryChange
from plait.evolve.save import Saved, save_graph, versions_on_save
from plait.evolve.skills import skill_source
from plait.model.nodes import NodeType
from plait.store import NotFoundError, Store, StoredGraph

_saved: ByteBoundCache[StoredGraph] = ByteBoundCache(
    "stored graph files", 64 << 20, weigh=lambda _stored, key: SAVED_WEIGHT * int(key[3]) + 4096
)
"""(database, file, mtime, size) -> what that file was stored as: starting many runs of one
unchanged file (batches, benchmarks) compiles and stores it once per process."""
SAVED_WEIGHT = 16
"""Bytes a stored graph holds per byte of its file (an estimate)."""


def save_graph_file(store: Store, path: str | os.PathLike[str]) -> StoredGraph:
    """Validate a graph file and store it (a new version only when its content changed).

    The stored content is the SKILL-expanded graph: a run pins exactly what it executes,
    even if the skill files change or disappear later.
    """
    file = Path(path).resolve()
    stat = file.stat()
    key = (store.url, str(file), stat.st_mtime_ns, stat.st_size)
    known = _saved.find(key)
    if known is not None and _still_stored(store, known):
        return known
    saved = save_file(store, file)
    if not saved.skills:  # skill files may change on their own
        _saved.put(key, saved.stored)
    return saved.stored


def _still_stored(store: Store, stored: StoredGraph) -> bool:
    """Whether the version a file was stored as is still in the database (one query): a graph
    can be deleted, or the database at this address emptied or replaced, while a process runs."""
    try:
        store.graphs.get(stored.graph_id, stored.version)
    except NotFoundError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class SavedFile:
    """A graph file as stored, with how its schema registry changed."""

    stored: StoredGraph
    change: RegistryChange
    skills: bool
    """The file inlines SKILL graphs (read from other files or the store, which may change)."""
    saved: Saved
    """The save itself: its warnings, and the stored outputs it left without a migration."""

    @property
    def warnings(self) -> list[str]:
        return self.saved.warnings


def save_file(store: Store, path: str | os.PathLike[str]) -> SavedFile:
    """Validate and store a graph file; with how its schema registry changed (`plait graphs import`).
    Its migrations are checked against the schema versions the store gives it (`versions_on_save`)."""
    result = compile_file(path, versions=versions_on_save(store), skills=skill_source(store))
    if not result.valid or result.expanded is None or result.graph is None:
        raise GraphInvalid(result.errors)
    saved = save_graph(store, result.expanded)
    skills = any(n.type == NodeType.SKILL for n in result.graph.nodes)
    return SavedFile(saved.stored, saved.change, skills, saved)
