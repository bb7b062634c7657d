"""How often a node activation's execution was lost with its process.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add `prompt_node_run.lost`: executions of the activation that never finished."""
    op.add_column("prompt_node_run", sa.Column("lost", sa.Integer(), nullable=False, server_default=sa.text("0")))


def downgrade() -> None:
    """Drop what `upgrade` added."""
    with op.batch_alter_table("prompt_node_run") as batch:
        batch.drop_column("lost")
