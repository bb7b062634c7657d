"""How the HTTP API says that an output is shown as stored because its schema moved on.

A run stays readable after its graph's schemas change: an output no migration brings to the
current version comes as stored, and this notice (on each such node run) names the schema,
both versions and the migration that would bring it forward, for the workbench's banner and
for any client.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class MigrationToAdd(BaseModel):
    """A migration, as the graph's `migrations` spells it, that would bring the output forward."""

    schema_id: str
    from_version: str = Field(description="A version pattern, e.g. 1.x.x.")
    to_version: str


class OutdatedOut(BaseModel):
    """Why effective_output is the stored value: it predates its schema's current version, and no
    migration brings it forward (or one failed)."""

    schema_id: str
    stored_version: str = Field(description="The schema version the output was stored at.")
    current_version: str = Field(description="The schema's version in the graph's latest version.")
    reason: Literal["no_migration", "migration_failed"]
    message: str = Field(description="What went wrong, naming the run and the node.")
    fix: str = Field(description="What to do about it, in the graph's terms.")
    migration: MigrationToAdd | None = Field(
        default=None, description="The migration to add to the graph's `migrations`, when one is missing."
    )


def outdated_out(notice: Any) -> OutdatedOut | None:
    """The notice of `plait.evolve.read.Outdated` (or None) as the API answers it."""
    return None if notice is None else OutdatedOut.model_validate(notice.as_json())
