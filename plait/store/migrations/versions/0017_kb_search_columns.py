"""Knowledge-base search: on both backends, indexes that find the chunks a generation added or
removed; on PostgreSQL, a stored `tsvector` per chunk, and pgvector's HNSW index over each
chunk's vector when the server has pgvector.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05

Written by hand and frozen, like 0001; `fresh.py` makes the same in the same words.

Exact dense search keeps a base's vectors in memory and follows its generations by reading only
the chunks added and removed since the one it holds: `idx_kb_chunk_added` and
`idx_kb_chunk_removed` find them without reading every chunk of the base.

Keyword search ranked each candidate by a `tsvector` computed again from its text (0016 indexed
only the expression): the column `tsv` keeps it, generated from heading and text, and the GIN
index covers it. Then, when the server has pgvector and the role may create it (or it is there
already), `kb_chunk.embedding` holds each chunk's vector (the bases' 384 dimensions), filled here
from `kb_vector` for the chunks already stored, with an HNSW index for cosine distance. The
extension is tried under a savepoint: without it nothing else changes and search stays exact.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DIMENSIONS = 384
KEYWORD_SEARCH = (
    "DROP INDEX idx_kb_chunk_tsv",
    """ALTER TABLE kb_chunk ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', heading || ' ' || "text")) STORED""",
    "CREATE INDEX idx_kb_chunk_tsv ON kb_chunk USING gin (tsv)",
)
VECTOR_SEARCH = (
    "ALTER TABLE kb_chunk ADD COLUMN embedding {schema}.vector(384)",
    "CREATE INDEX idx_kb_chunk_hnsw ON kb_chunk USING hnsw (embedding {schema}.vector_cosine_ops)",
)
EXTENSION_SCHEMA = (
    "SELECT quote_ident(n.nspname) FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
    "WHERE e.extname = 'vector'"
)


def upgrade() -> None:
    """The generation indexes; on PostgreSQL the stored `tsvector` and its index, and pgvector's
    column and index when it can be had."""
    op.create_index("idx_kb_chunk_added", "kb_chunk", ["kb_id", "added_generation"])
    op.create_index("idx_kb_chunk_removed", "kb_chunk", ["kb_id", "removed_generation"])
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        return
    for statement in KEYWORD_SEARCH:
        op.execute(statement)
    if _vector_search(conn):
        _fill_vectors(conn)


def _vector_search(conn: sa.Connection) -> bool:
    """Create pgvector (if needed), the column and its index, all or nothing; whether it worked."""
    available = "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
    if not conn.exec_driver_sql(available).scalar_one():
        return False
    try:
        with conn.begin_nested():
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
            schema = conn.exec_driver_sql(EXTENSION_SCHEMA).scalar_one()
            for statement in VECTOR_SEARCH:
                conn.exec_driver_sql(statement.format(schema=schema))
    except sa.exc.DBAPIError:  # not allowed to create it, or too old for HNSW
        return False
    return True


def _fill_vectors(conn: sa.Connection, batch: int = 500) -> None:
    """Each stored chunk's vector from `kb_vector`, in pgvector's text form, a batch at a time."""
    schema = conn.exec_driver_sql(EXTENSION_SCHEMA).scalar_one()
    update = sa.text(f"UPDATE kb_chunk SET embedding = CAST(:embedding AS {schema}.vector) WHERE id = :id")
    read = sa.text(
        "SELECT c.id, v.vector FROM kb_chunk c JOIN kb ON kb.id = c.kb_id "
        "JOIN kb_vector v ON v.kb_id = c.kb_id AND v.content_hash = c.content_hash "
        "WHERE kb.dimensions = :dimensions AND c.id > :after ORDER BY c.id LIMIT :batch"
    )
    after = 0
    while rows := conn.execute(read, {"dimensions": DIMENSIONS, "after": after, "batch": batch}).all():
        values = []
        for chunk_id, vector in rows:
            floats = struct.unpack(f"<{len(vector) // 4}f", bytes(vector))
            values.append({"id": chunk_id, "embedding": "[" + ",".join(map(repr, floats)) + "]"})
        conn.execute(update, values)
        after = rows[-1][0]


def downgrade() -> None:
    """Back to 0016's expression index (pgvector's column and index dropped; the extension kept)."""
    op.drop_index("idx_kb_chunk_removed", table_name="kb_chunk")
    op.drop_index("idx_kb_chunk_added", table_name="kb_chunk")
    if op.get_bind().dialect.name == "sqlite":
        return
    op.execute("DROP INDEX IF EXISTS idx_kb_chunk_hnsw")
    op.execute("ALTER TABLE kb_chunk DROP COLUMN IF EXISTS embedding")
    op.execute("DROP INDEX idx_kb_chunk_tsv")
    op.execute("ALTER TABLE kb_chunk DROP COLUMN tsv")
    op.execute(
        """CREATE INDEX idx_kb_chunk_tsv ON kb_chunk USING gin (to_tsvector('english', heading || ' ' || "text"))"""
    )
