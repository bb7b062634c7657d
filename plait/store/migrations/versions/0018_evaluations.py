"""Evaluations: sets of cases taken from the field ledger, evaluations of a candidate version on
them with one result per case, side and repetition, and every promotion of a graph's version.
Runs made by an evaluation say so (`purpose`), so that listings and few-shot pools leave them out,
and carry how they execute (`options_json`: the corrections their few-shot pool leaves out).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON(none_as_null=True)


def upgrade() -> None:
    """Create `eval_set`, `eval_case`, `evaluation`, `eval_result` and `graph_promotion`; add
    `prompt_graph_run.purpose`."""
    op.add_column("prompt_graph_run", sa.Column("purpose", sa.String(16), nullable=True))
    op.add_column("prompt_graph_run", sa.Column("options_json", JSON, nullable=True))
    op.create_table(
        "eval_set",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("graph_id", sa.String(36), sa.ForeignKey("prompt_graph_def.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("built_from_json", JSON, nullable=False),
        sa.Column("cases", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.UniqueConstraint("graph_id", "name", "revision", name="uq_eval_set_revision"),
    )
    op.create_table(
        "eval_case",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("set_id", sa.String(36), sa.ForeignKey("eval_set.id", ondelete="CASCADE"), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("level", sa.String(8), nullable=False),
        sa.Column("label", sa.String(16), nullable=False),
        sa.Column("critical", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("source_run_id", sa.String(36), nullable=False),
        sa.Column("node_run_id", sa.String(36), nullable=True),
        sa.Column("node_id", sa.String(128), nullable=True),
        sa.Column("graph_version", sa.Integer(), nullable=False),
        sa.Column("ledger_version", sa.Integer(), nullable=False),
        sa.Column("input_json", JSON, nullable=False),
        sa.Column("original_json", JSON, nullable=True),
        sa.Column("expected_json", JSON, nullable=True),
        sa.Column("schemas_json", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("judged_by", sa.String(200), nullable=True),
        sa.Column("judged_at", sa.Double(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.UniqueConstraint("set_id", "position", name="uq_eval_case_position"),
    )
    op.create_index("idx_eval_case_source", "eval_case", ["source_run_id"])
    op.create_table(
        "evaluation",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("set_id", sa.String(36), sa.ForeignKey("eval_set.id", ondelete="CASCADE"), nullable=False),
        sa.Column("graph_id", sa.String(36), nullable=False),
        sa.Column("candidate_version", sa.Integer(), nullable=False),
        sa.Column("baseline_version", sa.Integer(), nullable=True),
        sa.Column("repetitions", sa.Integer(), nullable=False, server_default=sa.text("1")),
        sa.Column("rules_json", JSON, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("verdict_json", JSON, nullable=True),
        sa.Column("error_json", JSON, nullable=True),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("completed_at", sa.Double(), nullable=True),
    )
    op.create_index("idx_evaluation_set", "evaluation", ["set_id"])
    op.create_index("idx_evaluation_graph", "evaluation", ["graph_id", "candidate_version"])
    op.create_table(
        "eval_result",
        sa.Column("evaluation_id", sa.String(36), sa.ForeignKey("evaluation.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("case_id", sa.String(36), sa.ForeignKey("eval_case.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("side", sa.String(16), primary_key=True),
        sa.Column("repetition", sa.Integer(), primary_key=True),
        sa.Column("run_id", sa.String(36), nullable=True),
        sa.Column("output_json", JSON, nullable=True),
        sa.Column("score_json", JSON, nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("incomparable", sa.Text(), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
    )
    op.create_table(
        "graph_promotion",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("graph_id", sa.String(36), sa.ForeignKey("prompt_graph_def.id", ondelete="CASCADE"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("previous_version", sa.Integer(), nullable=True),
        sa.Column("evaluation_id", sa.String(36), nullable=True),
        sa.Column("forced", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("promoted_by", sa.String(200), nullable=False),
        sa.Column("promoted_at", sa.Double(), nullable=False),
    )
    op.create_index("idx_graph_promotion_graph", "graph_promotion", ["graph_id", "promoted_at"])


def downgrade() -> None:
    """Drop what `upgrade` created, children first."""
    op.drop_index("idx_graph_promotion_graph", table_name="graph_promotion")
    op.drop_index("idx_evaluation_graph", table_name="evaluation")
    op.drop_index("idx_evaluation_set", table_name="evaluation")
    op.drop_index("idx_eval_case_source", table_name="eval_case")
    for table in ("graph_promotion", "eval_result", "evaluation", "eval_case", "eval_set"):
        op.drop_table(table)
    with op.batch_alter_table("prompt_graph_run") as runs:
        runs.drop_column("options_json")
        runs.drop_column("purpose")
