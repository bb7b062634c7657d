"""Graph housekeeping beside saving and reading: the list of a graph's versions, deletion, and
the read-only rule of system graphs.

A deleted graph is only marked (`deleted_at`): its versions stay readable by id, so every run
keeps the version it pinned; its slug is free for a new graph.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, or_, select, update

from plait.errors import Refusal
from plait.model.enums import SourceType
from plait.store.db import writer
from plait.store.errors import StoreError
from plait.store.models import GRAPH_DEF, GRAPH_DEF_VERSION, GRAPH_RUN, NODE_RUN


class ReadOnlyGraph(StoreError):
    """A system graph cannot be changed or deleted (fork it)."""

    kind = Refusal.FORBIDDEN
    code = "read_only"

    @classmethod
    def changing(cls, slug: str) -> ReadOnlyGraph:
        """The refusal of a new version of the system graph `slug` (a save, or its preview)."""
        return cls(
            f"graph '{slug}' ships with Plait (source_type system) and is read-only; fork it "
            f"(`plait graphs fork {slug}`) and change the fork"
        )


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One stored version of a graph as a version list shows it."""

    version: int
    schema_version: str
    content_hash: str
    created_at: float
    runs: int
    """Runs pinned to this version."""


class GraphAdmin:
    """Lists a graph's versions and deletes graphs. A deletion keeps every version readable, so
    no run loses the version it pinned; a system graph is never deleted (`ReadOnlyGraph`)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def versions(self, graph_id: str) -> list[VersionInfo]:
        """Every stored version of a graph, oldest first, with how many runs pinned each."""
        pinned = (
            select(GRAPH_RUN.c.graph_def_ver, func.count().label("runs"))
            .where(GRAPH_RUN.c.prompt_graph_def_id == graph_id)
            .group_by(GRAPH_RUN.c.graph_def_ver)
            .subquery()
        )
        query = (
            select(
                GRAPH_DEF_VERSION.c.version,
                GRAPH_DEF_VERSION.c.schema_version,
                GRAPH_DEF_VERSION.c.content_hash,
                GRAPH_DEF_VERSION.c.created_at,
                func.coalesce(pinned.c.runs, 0).label("runs"),
            )
            .outerjoin(pinned, pinned.c.graph_def_ver == GRAPH_DEF_VERSION.c.version)
            .where(GRAPH_DEF_VERSION.c.def_id == graph_id)
            .order_by(GRAPH_DEF_VERSION.c.version)
        )
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return [VersionInfo(r.version, r.schema_version, r.content_hash, r.created_at, r.runs) for r in rows]

    def runs_of(self, graph_id: str) -> int:
        """How many runs, of any version, the graph has."""
        with self._engine.connect() as conn:
            count = conn.execute(
                select(func.count()).select_from(GRAPH_RUN).where(GRAPH_RUN.c.prompt_graph_def_id == graph_id)
            ).scalar_one()
        return int(count)

    def stored_outputs(self, graph_id: str, limit: int) -> list[tuple[str, Any]]:
        """`(run id, effective output)` of the newest `limit` node runs, of any run of the graph,
        that have an output: what a save checks against the schemas it changes. Bounded, so that
        saving a graph with a long history reads a known number of rows."""
        query = (
            select(NODE_RUN.c.prompt_graph_run_id, NODE_RUN.c.output_json, NODE_RUN.c.override_json)
            .join(GRAPH_RUN, GRAPH_RUN.c.id == NODE_RUN.c.prompt_graph_run_id)
            .where(
                GRAPH_RUN.c.prompt_graph_def_id == graph_id,
                or_(NODE_RUN.c.output_json.is_not(None), NODE_RUN.c.override_json.is_not(None)),
            )
            .order_by(NODE_RUN.c.created_at.desc())
            .limit(limit)
        )
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return [
            (r.prompt_graph_run_id, r.override_json if r.override_json is not None else r.output_json) for r in rows
        ]

    def delete(self, graph_id: str, slug: str, source_type: str, *, force: bool = False) -> int:
        """Mark a graph deleted; refused for a system graph, and without `force` for a graph with
        runs (their pinned versions stay readable either way). Returns the number of runs kept."""
        if source_type == SourceType.SYSTEM:
            raise ReadOnlyGraph(
                f"graph '{slug}' ships with Plait (source_type system) and cannot be deleted; "
                f"fork it (`plait graphs fork {slug}`) to have a copy of your own"
            )
        runs = self.runs_of(graph_id)
        if runs and not force:
            raise StoreError(
                f"graph '{slug}' has {runs} runs: deleting it hides it from `plait graphs list` but keeps "
                "their pinned versions readable; pass --force to delete it anyway"
            )
        with self._writer.begin() as conn:
            conn.execute(
                update(GRAPH_DEF)
                .where(GRAPH_DEF.c.id == graph_id, GRAPH_DEF.c.deleted_at.is_(None))
                .values(deleted_at=time.time())
            )
        return runs
