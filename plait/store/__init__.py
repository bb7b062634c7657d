"""Persistence for graphs, runs and node runs: SQLAlchemy 2 on SQLite (default) or PostgreSQL,
schema managed by the Alembic migrations shipped in `plait/store/migrations/`.

    from plait.store import Store
    store = Store()                      # PLAIT_DB, else sqlite:///./.plait/plait.db
    stored = store.graphs.save(graph)    # new version only when the content changed
    run = store.runs.create(graph_id=stored.graph_id, graph_version=stored.version,
                            schema_version=stored.schema_version, input={"text": "..."})
    claim = store.runs.claim_node(run.id, "classify", 0, owner="engine-1")   # None: do not run
    store.runs.finish_node(claim.id, "engine-1", status=NodeStatus.COMPLETED, output={...})
"""

from __future__ import annotations

from plait.store.errors import ChildExists, NotFoundError, RunExists, StoreError
from plait.store.graphs import GraphRepository
from plait.store.records import ChildOf, GraphListing, NodeRunRecord, RunRecord, StoredGraph, current_activations
from plait.store.runs import RunRepository
from plait.store.store import Store
from plait.store.url import database_url, default_store, redact

__all__ = [
    "ChildExists",
    "ChildOf",
    "GraphListing",
    "GraphRepository",
    "NodeRunRecord",
    "NotFoundError",
    "RunExists",
    "RunRecord",
    "RunRepository",
    "Store",
    "StoreError",
    "StoredGraph",
    "current_activations",
    "database_url",
    "default_store",
    "redact",
]
