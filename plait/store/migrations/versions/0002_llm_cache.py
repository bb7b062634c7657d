"""The model response cache.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the response cache table."""
    op.create_table(
        "llm_response_cache",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("model", sa.Text(), nullable=False),
        sa.Column("response_json", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("node_run_id", sa.String(36), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
    )


def downgrade() -> None:
    """Drop the response cache table."""
    op.drop_table("llm_response_cache")
