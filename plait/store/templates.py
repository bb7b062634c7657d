"""Prompt-script templates (`prompt_script_template`): stored scripts an LLM_CALL's
`prompt_script` names by id, and the editor lists by category.

System templates ship with Plait (`plait/system_templates/`) and are stored with `source_type`
system by the start-up sync; they are read-only: an edited system template is saved as a user
template whose `based_on_template_id` names it. Deleting is soft (`deleted_at`): a run that
named a template still finds its row. The template last used in a category is remembered
(`prompt_script_template_usage`), for the editor to open with.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, insert, select, update
from sqlalchemy.exc import IntegrityError

from plait.errors import Refusal
from plait.store.db import conflict_insert, writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.models import PROMPT_TEMPLATE, TEMPLATE_USAGE

TEMPLATE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
EDITABLE = ("name", "description", "category", "script_code", "schema_target")
"""What `update` may change; `source_type`, `script_language` and the lineage are fixed."""


@dataclass(frozen=True, slots=True)
class TemplateRecord:
    """One stored template as read."""

    id: str
    name: str
    description: str | None
    category: str
    source_type: str
    script_language: str
    script_code: str
    schema_target: str | None
    based_on_template_id: str | None
    created_at: float
    updated_at: float
    deleted_at: float | None

    def as_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


class TemplateRepository:
    """Creates, reads, updates and (softly) deletes templates; system templates are read-only."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def list(self, *, category: str | None = None, deleted: bool = False) -> list[TemplateRecord]:
        """By category, then name; deleted ones only with `deleted`."""
        query = select(PROMPT_TEMPLATE)
        if category is not None:
            query = query.where(PROMPT_TEMPLATE.c.category == category)
        if not deleted:
            query = query.where(PROMPT_TEMPLATE.c.deleted_at.is_(None))
        query = query.order_by(PROMPT_TEMPLATE.c.category, PROMPT_TEMPLATE.c.name, PROMPT_TEMPLATE.c.id)
        with self._engine.connect() as conn:
            return [_record(row) for row in conn.execute(query)]

    def get(self, template_id: str, *, deleted: bool = False) -> TemplateRecord:
        """The template `template_id` (a deleted one only with `deleted`); NotFoundError otherwise."""
        with self._engine.connect() as conn:
            row = conn.execute(select(PROMPT_TEMPLATE).where(PROMPT_TEMPLATE.c.id == template_id)).one_or_none()
        if row is None or (row.deleted_at is not None and not deleted):
            state = "was deleted" if row is not None else "does not exist"
            raise NotFoundError(
                f"the prompt-script template '{template_id}' {state}; `plait templates list` shows the templates"
            )
        return _record(row)

    def create(
        self,
        template_id: str,
        *,
        name: str,
        script_code: str,
        category: str = "general",
        description: str | None = None,
        schema_target: str | None = None,
        based_on_template_id: str | None = None,
        source_type: str = "user",
    ) -> TemplateRecord:
        """A new template; StoreError when the id is taken (by a live or a deleted one) or not an id."""
        if not TEMPLATE_ID.match(template_id):
            raise StoreError(
                f"'{template_id}' is not a template id: use letters, digits, '_', '.' and '-' (128 at most), "
                "starting with a letter or digit",
                kind=Refusal.INVALID,
            )
        now = time.time()
        row = {
            "id": template_id,
            "name": name,
            "description": description,
            "category": category,
            "source_type": source_type,
            "script_language": "js",
            "script_code": script_code,
            "schema_target": schema_target,
            "based_on_template_id": based_on_template_id,
            "created_at": now,
            "updated_at": now,
            "deleted_at": None,
        }
        try:
            with self._writer.begin() as conn:
                conn.execute(insert(PROMPT_TEMPLATE).values(row))
        except IntegrityError:
            raise StoreError(
                f"a template with the id '{template_id}' exists already (a deleted one keeps its id); choose another"
            ) from None
        return self.get(template_id)

    def update(self, template_id: str, **changes: Any) -> TemplateRecord:
        """Change a user template's fields (`EDITABLE`); StoreError for a system template (save
        it as a user template instead, `create` with `based_on_template_id`)."""
        current = self.get(template_id)
        unknown = sorted(set(changes) - set(EDITABLE))
        if unknown:
            raise StoreError(f"a template's {', '.join(unknown)} cannot be changed (editable: {', '.join(EDITABLE)})")
        if current.source_type == "system":
            raise StoreError(
                f"'{template_id}' is a system template and read-only; save your version as a template of your own "
                f"(`plait templates create ID --from {template_id}`)"
            )
        values = {k: v for k, v in changes.items() if v is not None}
        if values:
            stmt = update(PROMPT_TEMPLATE).where(PROMPT_TEMPLATE.c.id == template_id)
            with self._writer.begin() as conn:
                conn.execute(stmt.values(**values, updated_at=time.time()))
        return self.get(template_id)

    def delete(self, template_id: str) -> TemplateRecord:
        """Delete a user template (softly: its row stays for the runs that named it)."""
        current = self.get(template_id)
        if current.source_type == "system":
            raise StoreError(f"'{template_id}' is a system template and cannot be deleted")
        stmt = update(PROMPT_TEMPLATE).where(PROMPT_TEMPLATE.c.id == template_id).values(deleted_at=time.time())
        with self._writer.begin() as conn:
            conn.execute(stmt)
        return self.get(template_id, deleted=True)

    def store_system(self, template: dict[str, Any]) -> None:
        """Store or refresh a system template as shipped (the start-up sync)."""
        now = time.time()
        row = {
            "id": template["id"],
            "name": template["name"],
            "description": template.get("description"),
            "category": template.get("category", "general"),
            "source_type": "system",
            "script_language": "js",
            "script_code": template["script_code"],
            "schema_target": template.get("schema_target"),
            "based_on_template_id": None,
            "created_at": now,
            "updated_at": now,
            "deleted_at": None,
        }
        kept = {k: v for k, v in row.items() if k not in ("id", "created_at")}
        stmt = conflict_insert(self._engine)(PROMPT_TEMPLATE).values(row)
        with self._writer.begin() as conn:
            conn.execute(stmt.on_conflict_do_update(index_elements=[PROMPT_TEMPLATE.c.id], set_=kept))

    def used(self, template_id: str) -> None:
        """Remember `template_id` as the last used of its category."""
        category = self.get(template_id).category
        now = time.time()
        stmt = conflict_insert(self._engine)(TEMPLATE_USAGE).values(
            category=category, template_id=template_id, used_at=now
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[TEMPLATE_USAGE.c.category], set_={"template_id": template_id, "used_at": now}
        )
        with self._writer.begin() as conn:
            conn.execute(stmt)

    def last_used(self, category: str) -> str | None:
        """The id of the template last used in `category`, if it is still there."""
        query = select(TEMPLATE_USAGE.c.template_id).where(TEMPLATE_USAGE.c.category == category)
        with self._engine.connect() as conn:
            found = conn.execute(query).scalar_one_or_none()
        if found is None:
            return None
        try:
            return self.get(str(found)).id
        except NotFoundError:
            return None


def _record(row: Any) -> TemplateRecord:
    return TemplateRecord(
        id=row.id,
        name=row.name,
        description=row.description,
        category=row.category,
        source_type=row.source_type,
        script_language=row.script_language,
        script_code=row.script_code,
        schema_target=row.schema_target,
        based_on_template_id=row.based_on_template_id,
        created_at=row.created_at,
        updated_at=row.updated_at,
        deleted_at=row.deleted_at,
    )
