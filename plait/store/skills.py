"""Stored skills (`skill`, `skill_version`): graphs with declared parameters that SKILL nodes name.

Each write of a skill's content is a new version numbered after the newest, in one transaction
with the skill's row, so two writers never store the same number (the second is refused and
may try again). Versions are never changed; deleting a skill deletes them all, which stored
graphs survive: they hold the skill's nodes inlined. What is in a version is checked above the
store (`plait.evolve.skills`), not here.
"""

from __future__ import annotations

import builtins
import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from plait.store.db import writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.skill_models import SKILL, SKILL_VERSION


@dataclass(frozen=True, slots=True)
class SkillVersionInfo:
    """When a version was stored, by whom, and why."""

    version: int
    created_at: float
    created_by: str
    note: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "created_at": self.created_at,
            "created_by": self.created_by,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class SkillRecord:
    """A skill at one version (the newest unless asked otherwise), with its version history."""

    name: str
    description: str | None
    category: str
    tags: list[str]
    created_at: float
    updated_at: float
    version: int
    parameters: list[dict[str, Any]]
    input_mapping: dict[str, str]
    document: dict[str, Any]
    versions: list[SkillVersionInfo] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def summary(self) -> dict[str, Any]:
        """What a listing shows: the newest version's number and parameters, no graph."""
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "tags": list(self.tags),
            "category": self.category,
            "parameters": list(self.parameters),
            "updated_at": self.updated_at,
        }

    def as_json(self) -> dict[str, Any]:
        """This version in full: its graph, parameters and mapping, and every version's history."""
        return {
            "name": self.name,
            "description": self.description,
            "tags": list(self.tags),
            "category": self.category,
            "version": self.version,
            "parameters": list(self.parameters),
            "input_mapping": dict(self.input_mapping),
            "graph": self.document,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "versions": [v.as_json() for v in self.versions],
        }


@dataclass(frozen=True, slots=True)
class SkillContent:
    """What one version holds: the graph document, its parameters and input mapping."""

    document: dict[str, Any]
    parameters: list[dict[str, Any]] = field(default_factory=list)
    input_mapping: dict[str, str] = field(default_factory=dict)
    created_by: str = "cli"
    note: str | None = None


class SkillRepository:
    """Creates skills, adds versions, reads, lists and deletes them."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def list(self, *, tag: str | None = None, category: str | None = None, q: str | None = None) -> list[SkillRecord]:
        """The skills by name, each at its newest version (without history): those with `tag`,
        in `category`, and whose name or description holds `q` (any case)."""
        newest = (
            select(SKILL_VERSION.c.name, func.max(SKILL_VERSION.c.version).label("version"))
            .group_by(SKILL_VERSION.c.name)
            .subquery()
        )
        query = (
            select(*_COLUMNS)
            .select_from(SKILL)
            .join(newest, newest.c.name == SKILL.c.name)
            .join(
                SKILL_VERSION,
                (SKILL_VERSION.c.name == newest.c.name) & (SKILL_VERSION.c.version == newest.c.version),
            )
            .order_by(SKILL.c.name)
        )
        if category is not None:
            query = query.where(SKILL.c.category == category)
        with self._engine.connect() as conn:
            found = [_record(row, []) for row in conn.execute(query)]
        needle = (q or "").lower()
        return [
            s
            for s in found
            if (tag is None or tag in s.tags) and (needle in s.name.lower() or needle in (s.description or "").lower())
        ]

    def get(self, name: str, version: int | None = None) -> SkillRecord:
        """The skill `name` at `version` (default: the newest), with every version's history."""
        with self._engine.connect() as conn:
            skill = conn.execute(select(SKILL).where(SKILL.c.name == name)).one_or_none()
            if skill is None:
                raise NotFoundError(f"there is no stored skill '{name}'; `plait skills list` shows the stored skills")
            history = _history(conn, name)
            wanted = version if version is not None else history[-1].version
            row = conn.execute(
                select(*_COLUMNS)
                .select_from(SKILL.join(SKILL_VERSION, SKILL_VERSION.c.name == SKILL.c.name))
                .where(SKILL.c.name == name, SKILL_VERSION.c.version == wanted)
            ).one_or_none()
        if row is None:
            raise NotFoundError(
                f"the skill '{name}' has no version {wanted} (its versions: 1 to {history[-1].version}); "
                f"`plait skills show {name}` lists them"
            )
        return _record(row, history)

    def find(self, name: str, version: int | None = None) -> SkillRecord | None:
        """`get`, or None when there is no such skill or version."""
        try:
            return self.get(name, version)
        except NotFoundError:
            return None

    def create(
        self,
        name: str,
        content: SkillContent,
        *,
        description: str | None = None,
        category: str = "general",
        tags: builtins.list[str] | None = None,
    ) -> SkillRecord:
        """A new skill at version 1; StoreError (a conflict) when the name is taken."""
        now = time.time()
        row = {"name": name, "description": description, "category": category, "tags_json": list(tags or [])}
        try:
            with self._writer.begin() as conn:
                conn.execute(insert(SKILL).values(**row, created_at=now, updated_at=now))
                conn.execute(insert(SKILL_VERSION).values(_version_row(name, 1, content, now)))
        except IntegrityError:
            raise StoreError(
                f"a skill named '{name}' exists already",
                f"store a new version of it (`plait skills update {name} FILE`), or choose another name",
            ) from None
        return self.get(name)

    def add_version(
        self,
        name: str,
        content: SkillContent,
        *,
        description: str | None = None,
        category: str | None = None,
        tags: builtins.list[str] | None = None,
    ) -> SkillRecord:
        """A new version of skill `name` (the newest + 1); the fields given replace the skill's."""
        now = time.time()
        changes: dict[str, Any] = {"updated_at": now}
        for key, value in (("description", description), ("category", category), ("tags_json", tags)):
            if value is not None:
                changes[key] = value
        try:
            with self._writer.begin() as conn:
                updated = conn.execute(update(SKILL).where(SKILL.c.name == name).values(**changes))
                if updated.rowcount == 0:
                    raise NotFoundError(
                        f"there is no stored skill '{name}'; add it first (`plait skills add FILE --name {name}`)"
                    )
                newest = conn.execute(
                    select(func.max(SKILL_VERSION.c.version)).where(SKILL_VERSION.c.name == name)
                ).scalar_one()
                conn.execute(insert(SKILL_VERSION).values(_version_row(name, int(newest or 0) + 1, content, now)))
        except IntegrityError:
            raise StoreError(
                f"the skill '{name}' got a new version while this one was being stored", "store it again"
            ) from None
        return self.get(name)

    def delete(self, name: str) -> None:
        """Delete the skill and every version of it (graphs that inlined it keep working)."""
        with self._writer.begin() as conn:
            conn.execute(delete(SKILL_VERSION).where(SKILL_VERSION.c.name == name))
            gone = conn.execute(delete(SKILL).where(SKILL.c.name == name))
        if gone.rowcount == 0:
            raise NotFoundError(f"there is no stored skill '{name}'; `plait skills list` shows the stored skills")


def _version_row(name: str, version: int, content: SkillContent, now: float) -> dict[str, Any]:
    return {
        "name": name,
        "version": version,
        "parameters_json": list(content.parameters),
        "input_mapping_json": dict(content.input_mapping),
        "document_json": content.document,
        "created_at": now,
        "created_by": content.created_by[:200],
        "note": content.note,
    }


def _history(conn: Connection, name: str) -> list[SkillVersionInfo]:
    rows = conn.execute(
        select(SKILL_VERSION.c.version, SKILL_VERSION.c.created_at, SKILL_VERSION.c.created_by, SKILL_VERSION.c.note)
        .where(SKILL_VERSION.c.name == name)
        .order_by(SKILL_VERSION.c.version)
    )
    return [SkillVersionInfo(r.version, r.created_at, r.created_by, r.note) for r in rows]


_COLUMNS = (
    *SKILL.c,
    SKILL_VERSION.c.version,
    SKILL_VERSION.c.parameters_json,
    SKILL_VERSION.c.input_mapping_json,
    SKILL_VERSION.c.document_json,
)
"""A skill's row with one version's content (the skill's own `created_at`, not the version's)."""


def _record(row: Any, history: list[SkillVersionInfo]) -> SkillRecord:
    data = row._mapping
    return SkillRecord(
        name=data["name"],
        description=data["description"],
        category=data["category"],
        tags=list(data["tags_json"] or []),
        created_at=data["created_at"],
        updated_at=data["updated_at"],
        version=data["version"],
        parameters=list(data["parameters_json"] or []),
        input_mapping=dict(data["input_mapping_json"] or {}),
        document=dict(data["document_json"]),
        versions=history,
    )
