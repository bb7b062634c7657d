"""A run's model selection and its changes, a run's execution time, and node runs queued to
bypass the response cache.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-14

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON(none_as_null=True)


def upgrade() -> None:
    """Add a run's model selection, its history and execution time, and a node run's cache bypass."""
    # Plain ADD COLUMN, not a batch: on SQLite a batch may copy the table, which would drop
    # prompt_node_run's trigger that keeps output_json immutable.
    op.add_column("prompt_graph_run", sa.Column("llm_json", JSON, nullable=True))
    op.add_column(
        "prompt_graph_run", sa.Column("llm_history_json", JSON, nullable=False, server_default=sa.text("'[]'"))
    )
    op.add_column("prompt_graph_run", sa.Column("active_s", sa.Double(), nullable=False, server_default=sa.text("0")))
    op.add_column("prompt_node_run", sa.Column("no_cache", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    """Drop the columns `upgrade` added."""
    with op.batch_alter_table("prompt_node_run") as batch:
        batch.drop_column("no_cache")
    with op.batch_alter_table("prompt_graph_run") as batch:
        batch.drop_column("active_s")
        batch.drop_column("llm_history_json")
        batch.drop_column("llm_json")
