"""The outbox: messages to workers, written in the transaction of the run they announce.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create `outbox`."""
    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(36), nullable=False),
        sa.Column("reason", sa.String(32), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("sent_at", sa.Double(), nullable=True),
    )
    op.create_index("idx_outbox_unsent", "outbox", ["sent_at", "id"])


def downgrade() -> None:
    """Drop what `upgrade` created."""
    op.drop_index("idx_outbox_unsent", table_name="outbox")
    op.drop_table("outbox")
