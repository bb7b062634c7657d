"""Child runs: the runs SUBGRAPH, MAP and LOOP nodes start.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-16

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add `child_key` and `body` to `prompt_graph_run` (its parent run and node run are the
    existing `workflow_run_id` and `workflow_node_run_id`), with a unique index on the node run
    and key: one child per item or iteration, found again on resume."""
    op.add_column("prompt_graph_run", sa.Column("child_key", sa.Integer(), nullable=True))
    op.add_column("prompt_graph_run", sa.Column("body", sa.Text(), nullable=True))
    op.create_index("uq_pgr_child", "prompt_graph_run", ["workflow_node_run_id", "child_key"], unique=True)


def downgrade() -> None:
    """Drop what `upgrade` added."""
    op.drop_index("uq_pgr_child", table_name="prompt_graph_run")
    with op.batch_alter_table("prompt_graph_run") as batch:
        batch.drop_column("body")
        batch.drop_column("child_key")
