"""Graph definitions: one row per slug plus one immutable row per saved version."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, and_, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from plait.caches import ByteBoundCache, small
from plait.model.enums import SourceType
from plait.store.db import json_dumps, writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.evaluation_models import GRAPH_PROMOTION
from plait.store.fastpath import Statements
from plait.store.graph_admin import ReadOnlyGraph
from plait.store.models import GRAPH_DEF, GRAPH_DEF_VERSION
from plait.store.records import GraphListing, StoredGraph

if TYPE_CHECKING:
    from plait.model import GraphDef

MANAGED_FIELDS = frozenset({"version", "schema_version", "created_at", "updated_at"})
"""Fields of `GraphDef` the store assigns; they are not part of a version's content, so
importing an export of version 3 with its `version: 3` line compares equal to version 3."""
DEFAULT_SCHEMA_VERSION = "1.0.0"
_SAVE_ATTEMPTS = 8


class StaleVersion(StoreError):
    """A save based on a version that is no longer the latest one: someone saved in between."""

    code = "version_conflict"

    def __init__(self, slug: str, *, latest: int, base: int) -> None:
        super().__init__(
            f"graph '{slug}' is at version {latest}, but this edit started from version {base}; nothing was stored",
            f"compare the edit with version {latest}, then save again based on version {latest}",
            [f"base_version: {base}", f"latest_version: {latest}"],
        )
        self.latest_version = latest
        self.base_version = base


def graph_content(graph: GraphDef) -> dict[str, Any]:
    """What a version stores: every field with defaults resolved, so a version keeps its
    meaning if a default changes in a later release; file-format names (`schema`)."""
    data = graph.model_dump(mode="json", by_alias=True)
    return {k: v for k, v in data.items() if k not in MANAGED_FIELDS}


def canonical_json(content: Any) -> str:
    """Key order and whitespace never make two equal graphs look different."""
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(content: Any) -> str:
    """Equal for equal content whatever its key order: how a save spots an unchanged graph."""
    return hashlib.sha256(canonical_json(content).encode()).hexdigest()


_META_COLS = (
    GRAPH_DEF.c.id,
    GRAPH_DEF.c.slug,
    GRAPH_DEF.c.version.label("latest_version"),
    GRAPH_DEF.c.source_type,
    GRAPH_DEF.c.created_at,
    GRAPH_DEF_VERSION.c.version,
    GRAPH_DEF_VERSION.c.schema_version,
    GRAPH_DEF_VERSION.c.content_hash,
    GRAPH_DEF_VERSION.c.created_at.label("version_created_at"),
    GRAPH_DEF.c.deleted_at,
)
_VERSION_COLS = (*_META_COLS, GRAPH_DEF_VERSION.c.content_json)
_LISTED_COLS = (
    GRAPH_DEF.c.id,
    GRAPH_DEF.c.slug,
    GRAPH_DEF.c.name,
    GRAPH_DEF.c.description,
    GRAPH_DEF.c.version,
    GRAPH_DEF.c.schema_version,
    GRAPH_DEF.c.source_type,
    GRAPH_DEF.c.created_at,
    GRAPH_DEF.c.parent_def_id,
    GRAPH_DEF.c.parent_def_ver_at_fork,
    GRAPH_DEF.c.parent_schema_ver_at_fork,
)
"""The graph row's copy of its latest version: what a list shows."""


def _lookup(version: Any) -> Any:
    """Metadata of one version of the graph whose id or slug is `:ref` (no row: no such graph; a
    row whose `version` is NULL: no such version). Built once: building a query costs more than
    running it."""
    ref: Any = bindparam("ref")
    on = and_(GRAPH_DEF_VERSION.c.def_id == GRAPH_DEF.c.id, GRAPH_DEF_VERSION.c.version == version)
    return (
        select(*_META_COLS)
        .select_from(GRAPH_DEF.outerjoin(GRAPH_DEF_VERSION, on))
        .where((GRAPH_DEF.c.id == ref) | (GRAPH_DEF.c.slug == ref))
        # An id match first, then the live graph with that slug, then the latest deleted one.
        .order_by((GRAPH_DEF.c.id == ref).desc(), GRAPH_DEF.c.deleted_at.is_(None).desc())
        .order_by(GRAPH_DEF.c.updated_at.desc())
        .limit(1)
    )


_PROMOTED = (
    select(GRAPH_PROMOTION.c.version)
    .where(GRAPH_PROMOTION.c.graph_id == GRAPH_DEF.c.id)
    .order_by(GRAPH_PROMOTION.c.promoted_at.desc())
    .limit(1)
    .correlate(GRAPH_DEF)
    .scalar_subquery()
)
"""The graph's promoted version: its newest promotion (docs/versions.md, "The promoted version")."""
_LATEST = _lookup(GRAPH_DEF.c.version)
_VERSION = _lookup(bindparam("version"))
_DEFAULT = _lookup(func.coalesce(_PROMOTED, GRAPH_DEF.c.version))
_CONTENT = select(GRAPH_DEF_VERSION.c.content_json).where(
    GRAPH_DEF_VERSION.c.def_id == bindparam("def_id"), GRAPH_DEF_VERSION.c.version == bindparam("version")
)


MAX_VERSION = 2**31 - 1
"""The largest version number a store can hold (PostgreSQL INTEGER)."""


class _Conflict(Exception):
    """Another process moved the graph to a new version between our read and our write."""


def _source_type(value: str) -> SourceType:
    try:
        return SourceType(value)
    except ValueError:
        choices = ", ".join(s.value for s in SourceType)
        raise StoreError(f"unknown source type '{value}': use one of {choices}") from None


_PARSED_BYTES = 64 << 20
"""What the parsed graph versions a repository keeps may weigh (the least recently used go)."""
_PARSED_WEIGHT = 8
"""Bytes a parsed graph holds per byte of its JSON (pydantic models, an estimate)."""


class GraphRepository:
    """Saves and reads graph definitions. A saved version never changes. A save whose content
    equals the latest version's returns that version instead of storing a new one; concurrent
    saves of one graph are serialized, so none is lost. Only Plait's own system-graph sync may
    save a `system` graph (`ReadOnlyGraph` otherwise). `get` finds a graph by id or slug."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)
        self._parsed: ByteBoundCache[GraphDef] = ByteBoundCache("parsed graph versions", _PARSED_BYTES, weigh=small)
        """Validated content by (def id, version): versions are immutable, so this never goes stale."""
        lookups = {"latest": _LATEST, "version": _VERSION, "default": _DEFAULT, "content": _CONTENT}
        self._statements = Statements(engine, lookups, frozenset(), json_dumps)

    def close(self) -> None:
        """Release the connection this repository keeps (`Store.close` calls it)."""
        self._statements.close()

    def save(self, graph: GraphDef, *, source_type: str | None = None, base_version: int | None = None) -> StoredGraph:
        """Store `graph` under its slug (`graph.id`) as a new version, unless the latest version
        already has exactly this content: then that one is returned with `created=False`.

        `base_version`: the version the edit started from. When another save came in between
        (the latest version is no longer that one), nothing is stored and `StaleVersion` says
        which version is the latest: a save never silently overwrites what someone else saved.

        Concurrent saves of one graph are serialized by a row lock on the graph (the write lock
        on SQLite); two processes creating the same new slug are resolved by its unique index,
        the loser re-reads and stores the next version.
        """
        kind = _source_type(source_type) if source_type is not None else graph.source_type
        # Only the package's system-graph sync says `source_type="system"` (plait.evolve.system).
        shipped = source_type is not None and kind == SourceType.SYSTEM
        if kind == SourceType.SYSTEM and not shipped:
            raise ReadOnlyGraph(
                f"graph '{graph.id}' says source_type: system, which is reserved for the graphs that ship "
                "with Plait; save it as user (remove the line) or fork the system graph"
            )
        graph = graph.model_copy(update={"source_type": kind})
        content = graph_content(graph)
        digest = content_hash(content)
        for _ in range(_SAVE_ATTEMPTS):
            try:
                return self._save_once(graph, content, digest, shipped=shipped, base_version=base_version)
            except (IntegrityError, _Conflict):
                continue  # a concurrent save won the race; look again
        raise StoreError(f"could not save graph '{graph.id}': other processes kept saving it at the same time; retry")

    def _save_once(
        self, graph: GraphDef, content: dict[str, Any], digest: str, *, shipped: bool, base_version: int | None
    ) -> StoredGraph:
        now = time.time()
        with self._writer.begin() as conn:
            current = conn.execute(
                select(
                    GRAPH_DEF.c.id,
                    GRAPH_DEF.c.version,
                    GRAPH_DEF.c.schema_version,
                    GRAPH_DEF.c.created_at,
                    GRAPH_DEF.c.source_type,
                )
                .where(GRAPH_DEF.c.slug == graph.id, GRAPH_DEF.c.deleted_at.is_(None))
                # PostgreSQL: concurrent saves of one graph queue here instead of failing on the
                # version key and retrying (SQLite is serialized by BEGIN IMMEDIATE already).
                .with_for_update()
            ).one_or_none()
            mirror = {
                "name": graph.name or graph.id,
                "description": graph.description,
                "nodes_json": content.get("nodes", []),
                "edges_json": content.get("edges", []),
                "schema_registry_json": content.get("schemas", []),
                "migrations_json": content.get("migrations", []),
                "source_type": str(graph.source_type),
                "parent_def_id": graph.parent_def_id,
                "parent_def_ver_at_fork": graph.parent_def_ver_at_fork,
                "parent_schema_ver_at_fork": graph.parent_schema_ver_at_fork,
                "updated_at": now,
            }
            if current is None:
                graph_id, version, created_at = str(uuid.uuid4()), 1, now
                schema_version = graph.schema_version or DEFAULT_SCHEMA_VERSION
                conn.execute(
                    insert(GRAPH_DEF).values(
                        id=graph_id,
                        slug=graph.id,
                        version=1,
                        schema_version=schema_version,
                        created_at=now,
                        **mirror,
                    )
                )
            else:
                if current.source_type == SourceType.SYSTEM and not shipped:
                    raise ReadOnlyGraph.changing(graph.id)
                if base_version is not None and current.version != base_version:
                    raise StaleVersion(graph.id, latest=current.version, base=base_version)
                graph_id, created_at = current.id, current.created_at
                latest = conn.execute(
                    select(*_VERSION_COLS)
                    .select_from(GRAPH_DEF.join(GRAPH_DEF_VERSION, GRAPH_DEF_VERSION.c.def_id == GRAPH_DEF.c.id))
                    .where(GRAPH_DEF.c.id == graph_id, GRAPH_DEF_VERSION.c.version == current.version)
                ).one()
                if latest.content_hash == digest:
                    return self._stored(latest, created=False)
                version = current.version + 1
                schema_version = graph.schema_version or current.schema_version
                changed = conn.execute(
                    update(GRAPH_DEF)
                    .where(GRAPH_DEF.c.id == graph_id, GRAPH_DEF.c.version == current.version)
                    .values(version=version, schema_version=schema_version, **mirror)
                ).rowcount
                if changed != 1:
                    raise _Conflict
            conn.execute(
                insert(GRAPH_DEF_VERSION).values(
                    def_id=graph_id,
                    version=version,
                    content_json=content,
                    content_hash=digest,
                    schema_version=schema_version,
                    created_at=now,
                )
            )
        return StoredGraph(
            graph_id=graph_id,
            slug=graph.id,
            version=version,
            latest_version=version,
            schema_version=schema_version,
            source_type=str(graph.source_type),
            graph=_with_managed(graph, version, schema_version, created_at, now),
            created=True,
            created_at=created_at,
            updated_at=now,
        )

    def get(self, ref: str, version: int | None = None) -> StoredGraph:
        """A graph by UUID or slug; the latest version unless `version` is given.

        One query for the version's metadata; the content is read (and parsed) only for a
        version this process has not seen yet: versions are immutable.
        """
        # A version no column can hold (a 32-bit INTEGER on PostgreSQL; SQLite refuses Python
        # ints over 64 bits) is not looked up: the database would fail on it, not answer "none".
        possible = version is None or 0 < version <= MAX_VERSION
        query, params = (
            ("version", {"ref": ref, "version": version})
            if version is not None and possible
            else ("latest", {"ref": ref})
        )
        return self._read(ref, query, params, version, possible=possible)

    def live(self, ref: str) -> StoredGraph:
        """The latest version of a graph that was not deleted: what every operation acting on
        *the graph* (update, fork, diff, merge, its evaluation sets) addresses. A deleted graph
        stays readable only by an explicit version, for its runs; acting on it by its slug would
        quietly store a new graph under that slug."""
        stored = self.get(ref)
        if stored.deleted_at is not None:
            raise NotFoundError(
                f"graph '{ref}' was deleted: its versions stay readable for its runs, but it cannot be changed; "
                "store it again (`plait graphs import FILE`) to work on it"
            )
        return stored

    def get_default(self, ref: str) -> StoredGraph:
        """The version of a graph a run uses when none is named: the promoted one (its newest
        promotion), else the latest. One query, as `get`; the one place that choice is made
        (`plait.engine.run_input.stored_graph` and the scheduler ask here)."""
        return self._read(ref, "default", {"ref": ref}, None, possible=True)

    def _read(
        self, ref: str, query: str, params: dict[str, Any], version: int | None, *, possible: bool
    ) -> StoredGraph:
        with self._statements.reading() as session:
            rows = session.rows(query, params)
            if not rows:
                raise NotFoundError(
                    f"no graph '{ref}' in this database: give a graph id or slug that "
                    "`plait graphs list` shows, or import the graph file first"
                )
            row = rows[0]
            if row.version is None or not possible:
                raise NotFoundError(
                    f"graph '{ref}' has no version {version}: its versions are 1 to {row.latest_version} "
                    "(`plait graphs versions` lists them)"
                )
            graph = self._parsed.find((row.id, row.version))
            if graph is None:
                content = session.rows("content", {"def_id": row.id, "version": row.version})[0].content_json
                graph = self._remember(row, content)
        return self._stored(row, created=False, graph=graph)

    def list(self, *, source_type: str | None = None) -> list[GraphListing]:
        """Every live graph by slug, as of its latest version (optionally of one source type)."""
        query = (
            select(
                *_LISTED_COLS,
                func.json_array_length(GRAPH_DEF.c.nodes_json).label("nodes"),
                GRAPH_DEF_VERSION.c.created_at.label("version_created_at"),
            )
            .select_from(
                GRAPH_DEF.join(
                    GRAPH_DEF_VERSION,
                    and_(
                        GRAPH_DEF_VERSION.c.def_id == GRAPH_DEF.c.id, GRAPH_DEF_VERSION.c.version == GRAPH_DEF.c.version
                    ),
                )
            )
            .where(GRAPH_DEF.c.deleted_at.is_(None))
            .order_by(GRAPH_DEF.c.slug)
        )
        if source_type is not None:
            query = query.where(GRAPH_DEF.c.source_type == str(_source_type(source_type)))
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return [
            GraphListing(
                **{c.name: getattr(row, c.name) for c in _LISTED_COLS if c.name != "id"},
                graph_id=row.id,
                nodes=int(row.nodes or 0),
                updated_at=row.version_created_at,
            )
            for row in rows
        ]

    def latest_version(self, graph_id: str) -> int:
        """The newest version of graph `graph_id` (deleted or not), without reading the graph."""
        return int(self._row_value(graph_id, GRAPH_DEF.c.version))

    def schema_versions(self, graph_id: str) -> dict[str, str]:
        """{schema id: version} of the latest version of graph `graph_id` (its row's copy of the
        schema registry, no graph parsed): what a reader checks stored outputs against."""
        registry = self._row_value(graph_id, GRAPH_DEF.c.schema_registry_json)
        return {str(entry["id"]): str(entry["version"]) for entry in registry}  # defaults are stored resolved

    def _row_value(self, graph_id: str, column: Any) -> Any:
        with self._engine.connect() as conn:
            value = conn.execute(select(column).where(GRAPH_DEF.c.id == graph_id)).scalar_one_or_none()
        if value is None:
            raise NotFoundError(f"no graph with id '{graph_id}' in this database")
        return value

    def _remember(self, row: Any, content: Any) -> GraphDef:
        """Parse a version's content once; the cached graph carries the store-managed fields."""
        from plait.model import GraphDef  # the graph models load only when a graph is read

        graph = GraphDef.model_validate(content)
        graph = _with_managed(graph, row.version, row.schema_version, row.created_at, row.version_created_at)
        self._parsed.put((row.id, row.version), graph, weight=_PARSED_WEIGHT * len(json_dumps(content)))
        return graph

    def _stored(self, row: Any, *, created: bool, graph: GraphDef | None = None) -> StoredGraph:
        """`row` has the `_META_COLS`, and `content_json` too unless `graph` is given."""
        if graph is None:
            graph = self._parsed.find((row.id, row.version)) or self._remember(row, row.content_json)
        return StoredGraph(
            graph_id=row.id,
            slug=row.slug,
            version=row.version,
            latest_version=row.latest_version,
            schema_version=row.schema_version,
            source_type=row.source_type,
            graph=graph,
            created=created,
            created_at=row.created_at,
            updated_at=row.version_created_at,
            deleted_at=row.deleted_at,
        )


def _with_managed(graph: GraphDef, version: int, schema_version: str, created_at: float, updated_at: float) -> GraphDef:
    return graph.model_copy(
        update={
            "version": version,
            "schema_version": schema_version,
            "created_at": int(created_at),
            "updated_at": int(updated_at),
        }
    )
