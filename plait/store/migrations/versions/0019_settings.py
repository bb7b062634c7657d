"""Settings changed while the server runs: one row per change, the whole overlay over plait.toml
after it and before it, who made it, when and why, and which change a revert undid.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON(none_as_null=True)


def upgrade() -> None:
    """Create `plait_settings_change`."""
    op.create_table(
        "plait_settings_change",
        sa.Column("revision", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("at", sa.Double(), nullable=False),
        sa.Column("by", sa.String(200), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("overlay_json", JSON, nullable=False),
        sa.Column("previous_json", JSON, nullable=False),
        sa.Column("reverts", sa.Integer(), nullable=True),
    )


def downgrade() -> None:
    """Drop `plait_settings_change`."""
    op.drop_table("plait_settings_change")
