"""A stored graph version as the engine executes it."""

from __future__ import annotations

from plait.engine.state import CompiledRun
from plait.store import Store


def load_compiled(store: Store, def_id: str, version: int) -> CompiledRun:
    return CompiledRun.from_graph(store.graphs.get(def_id, version).graph)
