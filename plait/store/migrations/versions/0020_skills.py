"""Stored skills: `skill` (name, description, category, tags) and `skill_version` (each
immutable version's graph document, declared parameters and input mapping).

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON(none_as_null=True)


def upgrade() -> None:
    """Create `skill` and `skill_version`."""
    op.create_table(
        "skill",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("category", sa.String(64), nullable=False, server_default=sa.text("'general'")),
        sa.Column("tags_json", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("updated_at", sa.Double(), nullable=False),
    )
    op.create_table(
        "skill_version",
        sa.Column("name", sa.String(64), sa.ForeignKey("skill.name", ondelete="CASCADE"), primary_key=True),
        sa.Column("version", sa.Integer(), primary_key=True),
        sa.Column("parameters_json", JSON, nullable=False, server_default=sa.text("'[]'")),
        sa.Column("input_mapping_json", JSON, nullable=False, server_default=sa.text("'{}'")),
        sa.Column("document_json", JSON, nullable=False),
        sa.Column("created_at", sa.Double(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
    )


def downgrade() -> None:
    """Drop what `upgrade` created, versions first."""
    op.drop_table("skill_version")
    op.drop_table("skill")
