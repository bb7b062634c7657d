"""When a run parked by WAIT nodes is due to continue.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-15

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add `prompt_graph_run.wake_at` and its index (the due runs are found by it)."""
    op.add_column("prompt_graph_run", sa.Column("wake_at", sa.Double(), nullable=True))
    op.create_index("idx_pgr_wake", "prompt_graph_run", ["wake_at"])


def downgrade() -> None:
    """Drop what `upgrade` added."""
    op.drop_index("idx_pgr_wake", table_name="prompt_graph_run")
    with op.batch_alter_table("prompt_graph_run") as batch:
        batch.drop_column("wake_at")
