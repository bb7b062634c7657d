"""Drafts: a graph's edits kept on the server before they are a version, valid or not.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-04

Written by hand and frozen, like 0001.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create `prompt_graph_draft`."""
    op.create_table(
        "prompt_graph_draft",
        sa.Column("slug", sa.String(128), primary_key=True),
        sa.Column("document_json", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("base_version", sa.Integer(), nullable=True),
        sa.Column("saved_at", sa.Double(), nullable=False),
    )


def downgrade() -> None:
    """Drop what `upgrade` created."""
    op.drop_table("prompt_graph_draft")
