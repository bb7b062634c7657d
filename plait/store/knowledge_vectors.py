"""Dense search inside PostgreSQL, when the database has pgvector: each chunk's vector in the
column `kb_chunk.embedding` (`vector(384)`), an HNSW index over it for cosine distance.

The vector sits on the chunk, not only beside its content hash in `kb_vector`, because every
filter of a search is a column of the chunk (base, the generations it was searchable between,
document, heading): the index scan applies them itself, and pgvector's iterative scan (0.8 and
later) goes on reading the index until enough chunks pass them. The column exists only where the
migration (or `fresh.py`) could create the extension; elsewhere, and for a base whose embedder
has other dimensions, search stays exact in numpy (`plait/engine/retrieval.py`).

The index is approximate: a search that gets fewer chunks than it asked for (a narrow filter past
`hnsw.max_scan_tuples`, a pgvector without iterative scans, a base smaller than the request) is
asked again without the index, exactly, over the chunks the filters let through.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Connection, Engine, MetaData, Table, bindparam, cast, text
from sqlalchemy.sql.elements import BindParameter, ColumnElement
from sqlalchemy.types import UserDefinedType

from plait.store.knowledge_models import KB_CHUNK

DIMENSIONS = 384
"""The dimensions of `kb_chunk.embedding` (every embedder Plait ships has these)."""
EF_SEARCH = 200
"""HNSW's candidate list (pgvector's default is 40), at least twice the chunks asked for (and at
most pgvector's 1,000). Measured on 100k chunks (docs/performance.md): recall@10 against exact
search 0.90 at 100, 0.95 at 200, 0.98 at 400, for 5, 8 and 14 ms a search."""
HNSW_INDEX = "idx_kb_chunk_hnsw"


@dataclass(frozen=True, slots=True)
class VectorIndex:
    """pgvector as this database has it: the schema its type lives in (its objects are named
    with it, whatever the connection's `search_path`) and its version."""

    schema: str
    version: str

    @property
    def iterative(self) -> bool:
        """Iterative index scans (0.8.0): a filtered search reads on until enough chunks pass."""
        major, minor = (int(part) for part in self.version.split(".")[:2])
        return (major, minor) >= (0, 8)

    def describe(self) -> str:
        return f"pgvector {self.version}, HNSW index (cosine) over chunks of {DIMENSIONS} dimensions"


def vector_index(conn: Connection) -> VectorIndex | None:
    """pgvector's index over `kb_chunk.embedding` in the connection's schema, when it has one."""
    if conn.dialect.name != "postgresql":
        return None
    found = conn.execute(
        text(
            "SELECT quote_ident(n.nspname) AS schema, e.extversion FROM pg_extension e "
            "JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        )
    ).first()
    if found is None:
        return None
    column = conn.execute(
        text(
            "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass('kb_chunk') "
            "AND attname = 'embedding' AND NOT attisdropped"
        )
    ).scalar_one()
    return VectorIndex(found.schema, found.extversion) if column else None


def in_database(url: str) -> tuple[VectorIndex | None, str]:
    """pgvector's index in the PostgreSQL database at `url`, or None with the reason dense
    search is exact there (`plait config check`; one connection, the store is not opened)."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.pool import NullPool

    from plait.store.url import parse_url

    engine = create_engine(parse_url(url), poolclass=NullPool, connect_args={"connect_timeout": 5})
    try:
        with engine.connect() as conn:
            found = vector_index(conn)
            if found is not None:
                return found, ""
            available = "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
            if not conn.execute(text(available)).scalar_one():
                return None, "pgvector is not installed on the server"
            return None, "pgvector was not created in this database when it was made or migrated"
    except SQLAlchemyError as exc:
        return None, f"the database did not answer: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc}"
    finally:
        engine.dispose()


def literal(vector: bytes | Sequence[float]) -> str:
    """A float32 vector (little-endian bytes, or floats) in pgvector's text form. A float32
    printed as the shortest double equal to it reads back as the same float32."""
    values = struct.unpack(f"<{len(vector) // 4}f", vector) if isinstance(vector, bytes) else vector
    return "[" + ",".join(map(repr, map(float, values))) + "]"


class _Vector(UserDefinedType[str]):
    """pgvector's type, named in its own schema; a value is bound as text and cast."""

    cache_ok = True

    def __init__(self, schema: str) -> None:
        self.schema = schema

    def get_col_spec(self, **_: Any) -> str:
        return f"{self.schema}.vector({DIMENSIONS})"

    def bind_expression(self, bindvalue: BindParameter[str]) -> ColumnElement[str]:
        return cast(bindvalue, self)


def chunk_table(index: VectorIndex) -> Table:
    """`kb_chunk` with its `embedding` column, for inserting chunks with their vectors (the
    models leave the column out: SQLite has none, nor a PostgreSQL without pgvector)."""
    columns = [Column(c.name, c.type, primary_key=c.primary_key, autoincrement=c.autoincrement) for c in KB_CHUNK.c]
    return Table("kb_chunk", MetaData(), *columns, Column("embedding", _Vector(index.schema)))


def nearest(
    engine: Engine,
    index: VectorIndex,
    kb_id: str,
    query: Any,
    limit: int,
    as_of: int,
    filters: Sequence[str],
    params: dict[str, Any],
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the `limit` chunks nearest `query` among those the base
    had searchable at `as_of` and `filters` (SQL over `c`, with their `params`) let through, best
    first; through the HNSW index, or exactly when the index gave fewer (see the module)."""
    statement, values = nearest_statement(index, kb_id, query, limit, as_of, filters, params)
    found = _scored(engine, index, statement, values, exact=False)
    if len(found) < limit:
        found = _scored(engine, index, statement, values, exact=True)
    return found


def nearest_statement(
    index: VectorIndex,
    kb_id: str,
    query: Any,
    limit: int,
    as_of: int,
    filters: Sequence[str],
    params: dict[str, Any],
) -> tuple[Any, dict[str, Any]]:
    """The statement `nearest` runs and its parameters (a test explains it to see the index used)."""
    distance = f"c.embedding OPERATOR({index.schema}.<=>) CAST(:query AS {index.schema}.vector)"
    where = [
        "c.kb_id = :kb",
        "c.added_generation <= :as_of",
        "(c.removed_generation IS NULL OR c.removed_generation > :as_of)",
        "c.embedding IS NOT NULL",
        *filters,
    ]
    sql = (
        f"SELECT c.id, {distance} AS distance FROM kb_chunk c WHERE {' AND '.join(where)} "
        f"ORDER BY {distance} LIMIT :limit"
    )
    statement = text(sql)
    if "documents" in params:
        statement = statement.bindparams(bindparam("documents", expanding=True))
    vector = literal([float(x) for x in query])
    return statement, {**params, "kb": kb_id, "as_of": as_of, "limit": limit, "query": vector}


def _scored(
    engine: Engine, index: VectorIndex, statement: Any, values: dict[str, Any], *, exact: bool
) -> list[tuple[int, float]]:
    if exact:  # no index scan: the planner sorts every chunk the filters let through
        settings = {"enable_indexscan": "off"}
    else:
        settings = {"hnsw.ef_search": str(min(1000, max(EF_SEARCH, 2 * int(values["limit"]))))}
        if index.iterative:
            settings["hnsw.iterative_scan"] = "relaxed_order"
    names = list(settings)
    local = ", ".join(f"set_config(:name{i}, :value{i}, true)" for i in range(len(names)))  # SET LOCAL, at once
    bound = {f"name{i}": name for i, name in enumerate(names)} | {f"value{i}": settings[n] for i, n in enumerate(names)}
    with engine.begin() as conn:
        conn.execute(text(f"SELECT {local}"), bound)
        rows = conn.execute(statement, values).all()
    # relaxed order: the index may return neighbours slightly out of order
    return sorted(((int(row.id), 1.0 - float(row.distance)) for row in rows), key=lambda hit: (-hit[1], hit[0]))
