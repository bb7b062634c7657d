"""Initial store: graph defs and their immutable versions, runs, node runs.

Revision ID: 0001
Revises:
Create Date: 2026-11-30

Written by hand and frozen: it must keep creating exactly this schema whatever the models
become later (later changes are new revisions). Types are spelled out here for that reason.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON(none_as_null=True)  # json, not jsonb, on PostgreSQL: key order is kept (see plait.store.models)
ID = sa.String(36)
IMMUTABLE_MESSAGE = "prompt_node_run.output_json is immutable once written; record a correction as an override"


def _ts(name: str, nullable: bool = False) -> sa.Column[float]:
    return sa.Column(name, sa.Double(), nullable=nullable)


def upgrade() -> None:
    """Create the graph, graph version, run and node run tables, and the output guard."""
    op.create_table(
        "prompt_graph_def",
        sa.Column("id", ID, primary_key=True),
        sa.Column("slug", sa.String(128), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("nodes_json", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("edges_json", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("schema_registry_json", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("migrations_json", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("version", sa.Integer(), nullable=False, server_default=sa.text("1")),
        sa.Column("schema_version", sa.String(32), nullable=False, server_default=sa.text("'1.0.0'")),
        sa.Column("source_type", sa.String(16), nullable=False, server_default=sa.text("'user'")),
        sa.Column("parent_def_id", ID, nullable=True),
        sa.Column("parent_def_ver_at_fork", sa.Integer(), nullable=True),
        sa.Column("parent_schema_ver_at_fork", sa.String(32), nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        _ts("deleted_at", nullable=True),
    )
    op.create_index("idx_pgd_source", "prompt_graph_def", ["source_type"])
    op.create_index(
        "uq_pgd_slug_live",
        "prompt_graph_def",
        ["slug"],
        unique=True,
        sqlite_where=sa.text("deleted_at IS NULL"),
        postgresql_where=sa.text("deleted_at IS NULL"),
    )

    op.create_table(
        "prompt_graph_def_version",
        sa.Column("def_id", ID, sa.ForeignKey("prompt_graph_def.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("version", sa.Integer(), primary_key=True),
        sa.Column("content_json", JSON, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("schema_version", sa.String(32), nullable=False),
        _ts("created_at"),
    )

    op.create_table(
        "prompt_graph_run",
        sa.Column("id", ID, primary_key=True),
        sa.Column("prompt_graph_def_id", ID, nullable=False),
        sa.Column("graph_def_ver", sa.Integer(), nullable=False),
        sa.Column("schema_version", sa.String(32), nullable=False),
        sa.Column("workflow_run_id", sa.Text(), nullable=True),
        sa.Column("workflow_node_run_id", sa.Text(), nullable=True),
        sa.Column("material_id", sa.Text(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False, server_default=sa.text("'pending'")),
        sa.Column("input_json", JSON, nullable=False),
        sa.Column("context_json", JSON, nullable=False, server_default=sa.text("'{}'")),
        sa.Column("output_json", JSON, nullable=True),
        sa.Column("error_json", JSON, nullable=True),
        sa.Column("lease_owner", sa.Text(), nullable=True),
        _ts("lease_expires_at", nullable=True),
        sa.Column("tokens_input", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        sa.Column("tokens_output", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
        sa.Column("cost_usd", sa.Double(), nullable=False, server_default=sa.text("0")),
        _ts("created_at"),
        _ts("started_at", nullable=True),
        _ts("completed_at", nullable=True),
        _ts("updated_at"),
        sa.ForeignKeyConstraint(
            ["prompt_graph_def_id", "graph_def_ver"],
            ["prompt_graph_def_version.def_id", "prompt_graph_def_version.version"],
            name="fk_pgr_def_version",
        ),
    )
    op.create_index("idx_pgr_def", "prompt_graph_run", ["prompt_graph_def_id"])
    op.create_index("idx_pgr_wf_run", "prompt_graph_run", ["workflow_run_id"])
    op.create_index("idx_pgr_status", "prompt_graph_run", ["status"])
    op.create_index("idx_pgr_created", "prompt_graph_run", ["created_at"])

    op.create_table(
        "prompt_node_run",
        sa.Column("id", ID, primary_key=True),
        sa.Column("prompt_graph_run_id", ID, sa.ForeignKey("prompt_graph_run.id", ondelete="CASCADE"), nullable=False),
        sa.Column("node_def_id", sa.Text(), nullable=False),
        sa.Column("activation", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("status", sa.String(16), nullable=False, server_default=sa.text("'pending'")),
        sa.Column("input_snapshot_json", JSON, nullable=True),
        sa.Column("output_json", JSON, nullable=True),
        sa.Column("override_json", JSON, nullable=True),
        sa.Column("override_by", sa.Text(), nullable=True),
        _ts("override_at", nullable=True),
        sa.Column("override_note", sa.Text(), nullable=True),
        sa.Column("downstream_policy", sa.String(16), nullable=True, server_default=sa.text("'INVALIDATE'")),
        sa.Column("attempts_json", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("error_json", JSON, nullable=True),
        sa.Column("tokens_input", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("tokens_output", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("cost_usd", sa.Double(), nullable=False, server_default=sa.text("0")),
        sa.Column("owner", sa.Text(), nullable=True),
        sa.Column("claims", sa.Integer(), nullable=False, server_default=sa.text("0")),
        _ts("created_at"),
        _ts("started_at", nullable=True),
        _ts("completed_at", nullable=True),
        sa.UniqueConstraint("prompt_graph_run_id", "node_def_id", "activation", name="uq_pnr_run_node_activation"),
    )
    op.create_index("idx_pnr_run", "prompt_node_run", ["prompt_graph_run_id"])
    _create_output_guard()


def _create_output_guard() -> None:
    """The rule "output_json is never modified" (corrections go to override_json), enforced by
    the database itself, not only by the repository's conditional UPDATEs: any later write that
    changes a non-NULL output aborts."""
    if op.get_context().dialect.name == "postgresql":
        op.execute(
            f"""
            CREATE FUNCTION plait_pnr_output_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION '{IMMUTABLE_MESSAGE}' USING ERRCODE = 'check_violation';
            END $$
            """
        )
        op.execute(
            """
            CREATE TRIGGER trg_pnr_output_immutable BEFORE UPDATE OF output_json ON prompt_node_run
            FOR EACH ROW
            WHEN (OLD.output_json IS NOT NULL AND NEW.output_json::text IS DISTINCT FROM OLD.output_json::text)
            EXECUTE FUNCTION plait_pnr_output_immutable()
            """
        )
    else:
        op.execute(
            f"""
            CREATE TRIGGER trg_pnr_output_immutable BEFORE UPDATE OF output_json ON prompt_node_run
            FOR EACH ROW WHEN OLD.output_json IS NOT NULL AND NEW.output_json IS NOT OLD.output_json
            BEGIN SELECT RAISE(ABORT, '{IMMUTABLE_MESSAGE}'); END
            """
        )


def downgrade() -> None:
    """Drop everything `upgrade` created."""
    op.execute("DROP TRIGGER IF EXISTS trg_pnr_output_immutable" + _on_table())
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS plait_pnr_output_immutable()")
    op.drop_table("prompt_node_run")
    op.drop_table("prompt_graph_run")
    op.drop_table("prompt_graph_def_version")
    op.drop_table("prompt_graph_def")


def _on_table() -> str:
    return " ON prompt_node_run" if op.get_context().dialect.name == "postgresql" else ""
