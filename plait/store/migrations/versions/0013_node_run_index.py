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
        _rebuild_ledger(" WITHOUT ROWID")


def downgrade() -> None:
    """Undo `upgrade`."""
    if op.get_bind().dialect.name == "sqlite":
        _rebuild_ledger("")
    op.create_index("idx_pnr_run", "prompt_node_run", ["prompt_graph_run_id"])


_COLUMNS = 'prompt_graph_run_id, owner_id, version, kind, value_json, frozen_json, node_run_id, "by", reason, at'


def _rebuild_ledger(options: str) -> None:
    """The ledger table made again with `options`, its rows copied: in plain SQL, since every new
    SQLite database runs this migration, and Alembic's batch mode (reflecting the table) costs
    about as much as all the other migrations together."""
    op.execute(f"""CREATE TABLE prompt_field_version_new (
    prompt_graph_run_id VARCHAR(36) NOT NULL,
    owner_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    kind VARCHAR(16) NOT NULL,
    value_json JSON,
    frozen_json JSON DEFAULT '{{}}' NOT NULL,
    node_run_id VARCHAR(36),
    "by" TEXT NOT NULL,
    reason TEXT,
    at DOUBLE NOT NULL,
    PRIMARY KEY (prompt_graph_run_id, owner_id, version),
    FOREIGN KEY(prompt_graph_run_id) REFERENCES prompt_graph_run (id) ON DELETE CASCADE
){options}""")
    op.execute(f"INSERT INTO prompt_field_version_new ({_COLUMNS}) SELECT {_COLUMNS} FROM prompt_field_version")
    op.execute("DROP TABLE prompt_field_version")
    op.execute("ALTER TABLE prompt_field_version_new RENAME TO prompt_field_version")
