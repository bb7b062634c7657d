"""Node-run writes touch fewer pages: no index on the run id alone, a ledger without rowids.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04

Every node the engine executes writes a node run and a ledger version, and the commit of each
changed page is most of what a node costs the store. Two of those pages answered nothing:
- `idx_pnr_run`, on `prompt_node_run.prompt_graph_run_id` alone: the unique index on (run,
  node, activation) leads with the run, and SQLite and PostgreSQL use it for "the node runs of
  this run" and for the cascade from a deleted run.
- On SQLite, `prompt_field_version` kept its rows in a rowid table beside the index of its key
  (run, owner, version); `WITHOUT ROWID` keeps them in that index alone. PostgreSQL has no
  rowid tables: nothing changes there.

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Drop `idx_pnr_run`; on SQLite, rebuild the ledger table `WITHOUT ROWID`."""
    op.drop_index("idx_pnr_run", table_name="prompt_node_run")
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("prompt_field_version", recreate="always", table_kwargs={"sqlite_with_rowid": False}):
            pass


def downgrade() -> None:
    """Undo `upgrade`."""
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("prompt_field_version", recreate="always", table_kwargs={"sqlite_with_rowid": True}):
            pass
    op.create_index("idx_pnr_run", "prompt_node_run", ["prompt_graph_run_id"])
