"""The bodies and answers of /api/skills (plait/api/routes/skills.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from plait.api.schemas import CheckedIn

_NAME = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"


class SkillParameterIn(CheckedIn):
    """One declared parameter: what the SKILL node's `inputs` are checked against."""

    name: str = Field(max_length=64, description="The parameter's name (letters, digits, '_').")
    schema_: Any = Field(default=True, alias="schema", description="A JSON Schema its value must match.")
    default: Any = Field(default=None, description="Its value when a SKILL node does not give it.")
    description: str | None = Field(default=None, max_length=2000)
    required: bool | None = Field(default=None, description="Default: required unless it has a default.")


class SkillChange(CheckedIn):
    """A new version of a skill: its graph, and what goes with it (a field left out keeps the skill's)."""

    description: str | None = Field(default=None, max_length=2000)
    tags: list[str] | None = Field(default=None, max_length=20, description="Short texts (64 characters at most).")
    category: str | None = Field(default=None, min_length=1, max_length=64)
    parameters: list[SkillParameterIn] = Field(default_factory=list, max_length=64)
    input_mapping: dict[str, str] = Field(
        default_factory=dict, description="The skill's input field -> the parameter it gets (default: its own name)."
    )
    graph: dict[str, Any] = Field(description="The skill's graph, as a graph file's fields (no file may be named).")
    note: str | None = Field(default=None, max_length=2000, description="Why this version (its history shows it).")

    def parameter_list(self) -> list[dict[str, Any]]:
        """The parameters as stored: `default` only when it was sent, `required` only when set."""
        given = []
        for p in self.parameters:
            item = p.model_dump(by_alias=True, exclude_unset=True)
            item.setdefault("schema", True)
            for key in ("required", "description"):
                if item.get(key, "") is None:
                    del item[key]
            given.append(item)
        return given


class SkillIn(SkillChange):
    """A new skill (version 1)."""

    name: str = Field(pattern=_NAME, description="Its name: what `skill:` of a SKILL node names.")


class SkillImportIn(CheckedIn):
    """A skill written in prose, to be made a skill graph by the server's model."""

    markdown: str = Field(min_length=1, max_length=200_000, description="Markdown with `name` and `description`.")
    name: str | None = Field(default=None, pattern=_NAME, description="Its name (default: the front matter's).")


class SkillVersionOut(BaseModel):
    version: int
    created_at: float
    created_by: str
    note: str | None


class SkillSummaryOut(BaseModel):
    """A skill in a listing: its newest version, without its graph."""

    name: str
    version: int = Field(description="The newest version.")
    description: str | None
    tags: list[str]
    category: str
    parameters: list[dict[str, Any]]
    updated_at: float


class SkillOut(BaseModel):
    """One version of a skill with its graph, and every version's history."""

    name: str
    description: str | None
    tags: list[str]
    category: str
    version: int
    parameters: list[dict[str, Any]]
    input_mapping: dict[str, str]
    graph: dict[str, Any]
    created_at: float
    updated_at: float
    versions: list[SkillVersionOut]
