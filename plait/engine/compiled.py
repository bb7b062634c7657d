"""Graphs as runs execute them: validated, SKILL-expanded, stored as an immutable version."""

from __future__ import annotations

import os

from plait.api_surface import GraphInvalid
from plait.compile import compile_file
from plait.engine.state import CompiledRun
from plait.store import Store, StoredGraph


def save_graph_file(store: Store, path: str | os.PathLike[str]) -> StoredGraph:
    """Validate a graph file and store it (a new version only when its content changed).

    The stored content is the SKILL-expanded graph: a run pins exactly what it executes,
    even if the skill files change or disappear later.
    """
    result = compile_file(path)
    if not result.valid or result.expanded is None:
        raise GraphInvalid(result.errors)
    return store.graphs.save(result.expanded)


def load_compiled(store: Store, def_id: str, version: int) -> CompiledRun:
    return CompiledRun.from_graph(store.graphs.get(def_id, version).graph)
