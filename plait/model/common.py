"""Shared building blocks of the graph model: base config, ids, enums, small value types."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StringConstraints

IDENT_RE = r"^[A-Za-z_][A-Za-z0-9_]*$"

Identifier = Annotated[str, StringConstraints(pattern=IDENT_RE, max_length=128)]
"""Node ids, schema ids, param names: they appear in template paths (`node.field`), so no dots or dashes."""

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
JsonObject = dict[str, Any]
JsonSchemaDoc = dict[str, Any] | StrictBool
"""A JSON Schema: an object, or `true` (anything is valid) / `false` (nothing is)."""


class PlaitModel(BaseModel):
    """Base of every file-format type: unknown fields are errors, never silently kept."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_default=False)


class Position(PlaitModel):
    """Where an editor draws a node; it never affects execution."""

    x: float = 0
    y: float = 0


def _key_to_str(value: Any) -> Any:
    # YAML 1.1 reads `yes`/`true`/`1` as bool/int; a condition key is always a string.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


ConditionKey = Annotated[str, BeforeValidator(_key_to_str), StringConstraints(min_length=1)]

Priority = Annotated[int, Field(ge=0, le=10)]
