"""The bodies of /api/templates (prompt-script templates, docs/prompt-scripts.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_SCRIPT_CHARS = 200_000


class TemplateOut(BaseModel):
    """A stored template; `script_code` only where one template is read."""

    id: str
    name: str
    description: str | None
    category: str
    source_type: str = Field(description="`system` (read-only: copy it with `from`) or `user`.")
    script_language: str
    script_code: str | None = None
    schema_target: str | None
    based_on_template_id: str | None
    created_at: float
    updated_at: float
    deleted_at: float | None


class TemplateIn(BaseModel):
    """A new user template: its script, or a copy of `from`'s (recorded as its base)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str = Field(min_length=1, max_length=128)
    name: str | None = Field(None, max_length=200)
    script_code: str | None = Field(None, max_length=MAX_SCRIPT_CHARS)
    from_template: str | None = Field(None, alias="from", description="Start from this template's script.")
    category: str | None = Field(None, max_length=64)
    description: str | None = Field(None, max_length=2000)
    schema_target: str | None = Field(None, max_length=200)


class TemplateChange(BaseModel):
    """What an update changes (fields left out stay as they are)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=200)
    script_code: str | None = Field(None, max_length=MAX_SCRIPT_CHARS)
    category: str | None = Field(None, max_length=64)
    description: str | None = Field(None, max_length=2000)
    schema_target: str | None = Field(None, max_length=200)


class LastUsedOut(BaseModel):
    category: str
    template_id: str | None


class PreviewIn(BaseModel):
    """A preview: a stored template or a script, against an input or a run's node. A newer
    preview with the same `session` cancels the older one."""

    model_config = ConfigDict(extra="forbid")

    template_id: str | None = None
    script_code: str | None = Field(None, max_length=MAX_SCRIPT_CHARS)
    input: dict[str, Any] = Field(default_factory=dict)
    run_id: str | None = None
    node_id: str | None = None
    session: str | None = Field(None, max_length=128, description="The editor session (one preview at a time).")


class GenerateIn(PreviewIn):
    """A generation: the preview's script and host, then a model call whose answer streams back.
    The model is the pool's `role` (or a `model` of it by name); `schema_target` (default: the
    template's) asks for JSON and checks the answer against that schema where it is known."""

    role: str = Field("chat", min_length=1, max_length=64)
    model: str | None = Field(None, max_length=200)
    schema_target: str | None = Field(None, max_length=200)
    max_tokens: int | None = Field(None, ge=1, le=32_000)
