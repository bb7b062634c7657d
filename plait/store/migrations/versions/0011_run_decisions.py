"""Resource decisions recorded on runs: queued, paused, degraded or rejected, and why.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create `run_decision`."""
    op.create_table(
        "run_decision",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(36), sa.ForeignKey("prompt_graph_run.id", ondelete="CASCADE"), nullable=False),
        sa.Column("node_run_id", sa.String(36), nullable=True),
        sa.Column("at", sa.Double(), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("rule", sa.String(32), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("probe_json", sa.JSON(none_as_null=True), nullable=True),
    )
    op.create_index("idx_run_decision_run", "run_decision", ["run_id", "id"])


def downgrade() -> None:
    """Drop what `upgrade` created."""
    op.drop_index("idx_run_decision_run", table_name="run_decision")
    op.drop_table("run_decision")
