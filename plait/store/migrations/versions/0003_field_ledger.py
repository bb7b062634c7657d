"""The field ledger: versions of every value in a run, and what read them;
a run's count of corrections (how an engine executing it notices one); store-wide settings.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON(none_as_null=True)


def upgrade() -> None:
    """Create the ledger and settings tables; add what a node run read and a run's correction count."""
    op.create_table(
        "prompt_field_version",
        sa.Column(
            "prompt_graph_run_id",
            sa.String(36),
            sa.ForeignKey("prompt_graph_run.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("owner_id", sa.Text(), primary_key=True),
        sa.Column("version", sa.Integer(), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("value_json", JSON, nullable=True),
        sa.Column("frozen_json", JSON, nullable=False, server_default=sa.text("'{}'")),
        sa.Column("node_run_id", sa.String(36), nullable=True),
        sa.Column("by", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("at", sa.Double(), nullable=False),
    )
    with op.batch_alter_table("prompt_node_run") as batch:
        batch.add_column(sa.Column("consumed_json", JSON, nullable=True))
    with op.batch_alter_table("prompt_graph_run") as batch:
        batch.add_column(sa.Column("corrections", sa.Integer(), nullable=False, server_default=sa.text("0")))
    op.create_table(
        "plait_setting",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    """Drop everything `upgrade` added."""
    op.drop_table("plait_setting")
    with op.batch_alter_table("prompt_graph_run") as batch:
        batch.drop_column("corrections")
    with op.batch_alter_table("prompt_node_run") as batch:
        batch.drop_column("consumed_json")
    op.drop_table("prompt_field_version")
