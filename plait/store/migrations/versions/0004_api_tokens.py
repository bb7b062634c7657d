"""Bearer tokens of the HTTP API (`plait token create`): only their SHA-256 digests are stored.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-07

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create the token table."""
    op.create_table(
        "plait_api_token",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("last_used_at", sa.Double(), nullable=True),
        sa.UniqueConstraint("name", name="uq_plait_api_token_name"),
        sa.UniqueConstraint("token_hash", name="uq_plait_api_token_hash"),
    )


def downgrade() -> None:
    """Drop the token table."""
    op.drop_table("plait_api_token")
