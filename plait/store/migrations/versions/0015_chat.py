"""Chat: sessions that design graphs with a person, their messages, drafts and uploads.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON(none_as_null=True)


def _session_id() -> sa.Column[str]:
    return sa.Column("session_id", sa.String(36), sa.ForeignKey("chat_session.id", ondelete="CASCADE"), nullable=False)


def upgrade() -> None:
    """Create `chat_session`, `chat_message`, `chat_draft` and `chat_upload`."""
    op.create_table(
        "chat_session",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("graph_id", sa.String(36), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.Column("last_seq", sa.Integer(), nullable=False, server_default=sa.text("0")),
    )
    op.create_index("idx_chat_session_updated", "chat_session", ["updated_at"])
    op.create_table(
        "chat_message",
        sa.Column("id", sa.String(36), primary_key=True),
        _session_id(),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("content_json", JSON, nullable=False),
        sa.Column("draft_id", sa.String(36), nullable=True),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.UniqueConstraint("session_id", "seq", name="uq_chat_message_seq"),
    )
    op.create_table(
        "chat_draft",
        sa.Column("id", sa.String(36), primary_key=True),
        _session_id(),
        sa.Column("base_graph_id", sa.String(36), nullable=True),
        sa.Column("base_version", sa.Integer(), nullable=True),
        sa.Column("document_json", JSON, nullable=False),
        sa.Column("operations_json", JSON, nullable=False),
        sa.Column("diagnostics_json", JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("designer_runs_json", JSON, nullable=False),
        sa.Column("result_graph_id", sa.String(36), nullable=True),
        sa.Column("result_version", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("decided_at", sa.Double(), nullable=True),
    )
    op.create_index("idx_chat_draft_session", "chat_draft", ["session_id"])
    op.create_table(
        "chat_upload",
        sa.Column("id", sa.String(36), primary_key=True),
        _session_id(),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("media_type", sa.String(127), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    op.create_index("idx_chat_upload_session", "chat_upload", ["session_id"])


def downgrade() -> None:
    """Drop what `upgrade` created, children first."""
    op.drop_index("idx_chat_upload_session", table_name="chat_upload")
    op.drop_table("chat_upload")
    op.drop_index("idx_chat_draft_session", table_name="chat_draft")
    op.drop_table("chat_draft")
    op.drop_table("chat_message")
    op.drop_index("idx_chat_session_updated", table_name="chat_session")
    op.drop_table("chat_session")
