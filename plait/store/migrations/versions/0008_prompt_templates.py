"""Prompt-script templates, and the one last used per category.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-16

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create `prompt_script_template` and `prompt_script_template_usage`."""
    op.create_table(
        "prompt_script_template",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("category", sa.String(64), nullable=False, server_default=sa.text("'general'")),
        sa.Column("source_type", sa.String(16), nullable=False, server_default=sa.text("'user'")),
        sa.Column("script_language", sa.String(16), nullable=False, server_default=sa.text("'js'")),
        sa.Column("script_code", sa.Text(), nullable=False),
        sa.Column("schema_target", sa.Text(), nullable=True),
        sa.Column("based_on_template_id", sa.String(128), nullable=True),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
        sa.Column("deleted_at", sa.Double(), nullable=True),
    )
    op.create_index("idx_pst_category", "prompt_script_template", ["category"])
    op.create_table(
        "prompt_script_template_usage",
        sa.Column("category", sa.String(64), primary_key=True),
        sa.Column("template_id", sa.String(128), nullable=False),
        sa.Column("used_at", sa.Double(), nullable=False),
    )


def downgrade() -> None:
    """Drop what `upgrade` created."""
    op.drop_table("prompt_script_template_usage")
    op.drop_index("idx_pst_category", table_name="prompt_script_template")
    op.drop_table("prompt_script_template")
