"""A stored graph version as the engine executes it."""

from __future__ import annotations

from plait.engine.state import CompiledRun
from plait.store import Store


def load_compiled(store: Store, graph_id: str, version: int) -> CompiledRun:
    """Version `version` of the stored graph `graph_id`, indexed for execution; raises the
    store's error when that version is not stored."""
    return CompiledRun.from_graph(store.graphs.get(graph_id, version).graph)
