"""A stored graph version as the engine executes it, or one of the inline bodies it holds."""

from __future__ import annotations

from plait.engine.state import CompiledRun
from plait.store import Store


def load_compiled(store: Store, graph_id: str, version: int, body: str | None = None) -> CompiledRun:
    """Version `version` of the stored graph `graph_id` (or, with `body`, the inline body at that
    path in it, see `CompiledRun.at`), indexed for execution; raises the store's error when that
    version is not stored, KeyError when it holds no such body."""
    return CompiledRun.from_graph(store.graphs.get(graph_id, version).graph).at(body)
