"""The answer of `POST /api/graphs/{ref}/preview`: what a save would store, before storing it.

The workbench shows it when a person presses Save, so the schema-change classification (patch,
minor or major, with the findings) is seen before the new version exists.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from plait.api.responses import schema_changes
from plait.api.schemas import SchemaChangeOut
from plait.evolve.save import SavePreview


class SavePreviewOut(BaseModel):
    """What `PUT /api/graphs/{ref}` with the same body would store now; nothing was stored."""

    latest_version: int | None = Field(description="The version stored now.")
    version: int = Field(description="The version the save would store (the latest when unchanged).")
    unchanged: bool = Field(description="The content equals the latest version's: no new version.")
    schema_version: str = Field(description="The graph's schema_version after the save.")
    level: str | None = Field(description="The highest level of the schema changes: patch, minor or major.")
    schema_changes: list[SchemaChangeOut]
    warnings: list[str]


_ORDER = ("patch", "minor", "major")


def preview_out(preview: SavePreview) -> SavePreviewOut:
    """The preview as the API answers it."""
    changes = schema_changes(preview.change)
    levels = [c.level for c in changes if c.level in _ORDER]
    latest = preview.latest_version
    return SavePreviewOut(
        latest_version=latest,
        version=(latest or 0) + (0 if preview.unchanged else 1),
        unchanged=preview.unchanged,
        schema_version=preview.schema_version,
        level=max(levels, key=_ORDER.index) if levels else None,
        schema_changes=changes,
        warnings=list(preview.warnings),
    )
