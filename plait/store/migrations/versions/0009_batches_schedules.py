"""Batches (one run per record of a JSONL file, with their cursor) and cron schedules with
their firings.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create `batch`, `batch_record`, `schedule` and `schedule_firing`."""
    op.create_table(
        "batch",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("graph_id", sa.String(36), nullable=False),
        sa.Column("graph_version", sa.Integer(), nullable=False),
        sa.Column("input_path", sa.Text(), nullable=False),
        sa.Column("output_path", sa.Text(), nullable=False),
        sa.Column("failed_path", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("total", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
    )
    op.create_index("idx_batch_files", "batch", ["input_path", "output_path"])
    op.create_table(
        "batch_record",
        sa.Column("batch_id", sa.String(36), sa.ForeignKey("batch.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("record_index", sa.BigInteger(), primary_key=True),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.Double(), nullable=False),
    )
    op.create_table(
        "schedule",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("graph_id", sa.String(36), nullable=False),
        sa.Column("cron", sa.Text(), nullable=False),
        sa.Column("timezone", sa.String(64), nullable=False, server_default=sa.text("'UTC'")),
        sa.Column("input_json", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("catch_up", sa.String(8), nullable=False, server_default=sa.text("'one'")),
        sa.Column("status", sa.String(16), nullable=False, server_default=sa.text("'active'")),
        sa.Column("next_fire_at", sa.Double(), nullable=False),
        sa.Column("last_fired_at", sa.Double(), nullable=True),
        sa.Column("last_run_id", sa.String(36), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.Column("deleted_at", sa.Double(), nullable=True),
    )
    op.create_index("idx_schedule_due", "schedule", ["status", "next_fire_at"])
    op.create_table(
        "schedule_firing",
        sa.Column("schedule_id", sa.String(36), sa.ForeignKey("schedule.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("fire_at", sa.Double(), primary_key=True),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("claimed_at", sa.Double(), nullable=False),
        sa.Column("claimed_by", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    """Drop what `upgrade` created."""
    op.drop_table("schedule_firing")
    op.drop_index("idx_schedule_due", table_name="schedule")
    op.drop_table("schedule")
    op.drop_table("batch_record")
    op.drop_index("idx_batch_files", table_name="batch")
    op.drop_table("batch")
