"""Knowledge bases: their documents, chunks and vectors, keyword search over the chunks, and the
facts a chat's memory keeps.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05

Written by hand and frozen, like 0001. The keyword index is made here in the words `fresh.py`
uses: an FTS5 table kept by triggers on SQLite, a GIN index over a `tsvector` on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON(none_as_null=True)

SQLITE_SEARCH = (
    """CREATE VIRTUAL TABLE kb_chunk_fts USING fts5(heading, text, content='kb_chunk', content_rowid='id',
    tokenize='porter unicode61')""",
    """CREATE TRIGGER trg_kb_chunk_fts_insert AFTER INSERT ON kb_chunk BEGIN
    INSERT INTO kb_chunk_fts(rowid, heading, text) VALUES (new.id, new.heading, new.text); END""",
    """CREATE TRIGGER trg_kb_chunk_fts_delete AFTER DELETE ON kb_chunk BEGIN
    INSERT INTO kb_chunk_fts(kb_chunk_fts, rowid, heading, text)
    VALUES ('delete', old.id, old.heading, old.text); END""",
)
POSTGRESQL_SEARCH = (
    """CREATE INDEX idx_kb_chunk_tsv ON kb_chunk USING gin (to_tsvector('english', heading || ' ' || "text"))""",
)


def _kb_id() -> sa.Column[str]:
    return sa.Column("kb_id", sa.String(36), sa.ForeignKey("kb.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    """Create `kb`, `kb_document`, `kb_chunk`, `kb_vector`, the keyword index and `memory_fact`."""
    op.create_table(
        "kb",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("description", sa.Text(), nullable=False, server_default=sa.text("''")),
        sa.Column("embedder", sa.String(64), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("chunk_tokens", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.UniqueConstraint("name", name="uq_kb_name"),
    )
    op.create_table(
        "kb_document",
        sa.Column("id", sa.String(36), primary_key=True),
        _kb_id(),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("media_type", sa.String(127), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("metadata_json", JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("chunks", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.UniqueConstraint("kb_id", "name", name="uq_kb_document_name"),
    )
    op.create_table(
        "kb_chunk",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _kb_id(),
        sa.Column("document_id", sa.String(36), sa.ForeignKey("kb_document.id", ondelete="CASCADE"), nullable=False),
        sa.Column("document_version", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("heading_path_json", JSON, nullable=False),
        sa.Column("heading", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("added_generation", sa.Integer(), nullable=False),
        sa.Column("removed_generation", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    op.create_index("idx_kb_chunk_document", "kb_chunk", ["document_id", "status"])
    op.create_index("idx_kb_chunk_kb", "kb_chunk", ["kb_id", "status"])
    op.create_table(
        "kb_vector",
        sa.Column("kb_id", sa.String(36), sa.ForeignKey("kb.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("content_hash", sa.String(64), primary_key=True),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    for statement in SQLITE_SEARCH if op.get_bind().dialect.name == "sqlite" else POSTGRESQL_SEARCH:
        op.execute(statement)
    op.create_table(
        "memory_fact",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("predicate", sa.Text(), nullable=False),
        sa.Column("object", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("valid_from", sa.Double(), nullable=True),
        sa.Column("entities_json", JSON, nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=True),
        sa.Column("embedder", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("supersedes", sa.String(36), nullable=True),
        sa.Column("superseded_by", sa.String(36), nullable=True),
        sa.Column("source_json", JSON, nullable=False),
        sa.Column("created_by", sa.String(120), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
    )
    op.create_index("idx_memory_fact_scope", "memory_fact", ["scope", "status"])
    with op.batch_alter_table("chat_session") as table:
        table.add_column(sa.Column("memory_seq", sa.Integer(), nullable=False, server_default=sa.text("0")))


def downgrade() -> None:
    """Drop what `upgrade` created, the keyword index and children first."""
    with op.batch_alter_table("chat_session") as table:
        table.drop_column("memory_seq")
    op.drop_index("idx_memory_fact_scope", table_name="memory_fact")
    op.drop_table("memory_fact")
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER trg_kb_chunk_fts_delete")
        op.execute("DROP TRIGGER trg_kb_chunk_fts_insert")
        op.execute("DROP TABLE kb_chunk_fts")
    else:
        op.execute("DROP INDEX idx_kb_chunk_tsv")
    op.drop_table("kb_vector")
    op.drop_index("idx_kb_chunk_kb", table_name="kb_chunk")
    op.drop_index("idx_kb_chunk_document", table_name="kb_chunk")
    op.drop_table("kb_chunk")
    op.drop_table("kb_document")
    op.drop_table("kb")
