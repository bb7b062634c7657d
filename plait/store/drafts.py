"""Graph drafts (`prompt_graph_draft`): edits of a graph kept before they are a version.

A draft is stored as written, valid or not (checking it is the caller's business, and a
graph being built is usually invalid for a while). There is one draft per slug: the canvas
keeps replacing it as a person edits, and drops it when the edits are stored as a version or
discarded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, delete, select

from plait.store.db import conflict_insert, writer
from plait.store.models import GRAPH_DRAFT


@dataclass(frozen=True, slots=True)
class DraftRecord:
    """One stored draft: the graph document as written, and the version it started from (None
    for a graph never stored)."""

    slug: str
    document: dict[str, Any]
    base_version: int | None
    saved_at: float


class DraftRepository:
    """Keeps, reads, lists and drops drafts; keeping one replaces the slug's earlier draft."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def keep(self, slug: str, document: dict[str, Any], base_version: int | None) -> DraftRecord:
        """Store `document` as the draft of `slug`, replacing any earlier one."""
        saved_at = time.time()
        values = {"document_json": document, "base_version": base_version, "saved_at": saved_at}
        stmt = conflict_insert(self._engine)(GRAPH_DRAFT).values(slug=slug, **values)
        with self._writer.begin() as conn:
            conn.execute(stmt.on_conflict_do_update(index_elements=[GRAPH_DRAFT.c.slug], set_=values))
        return DraftRecord(slug, document, base_version, saved_at)

    def get(self, slug: str) -> DraftRecord | None:
        """The draft of `slug`, or None when it has none."""
        with self._engine.connect() as conn:
            row = conn.execute(select(GRAPH_DRAFT).where(GRAPH_DRAFT.c.slug == slug)).first()
        return None if row is None else _record(row)

    def list(self) -> list[DraftRecord]:
        """Every draft, the most recently saved first."""
        with self._engine.connect() as conn:
            rows = conn.execute(select(GRAPH_DRAFT).order_by(GRAPH_DRAFT.c.saved_at.desc())).all()
        return [_record(row) for row in rows]

    def drop(self, slug: str) -> bool:
        """Forget the draft of `slug`; False when it had none."""
        with self._writer.begin() as conn:
            return conn.execute(delete(GRAPH_DRAFT).where(GRAPH_DRAFT.c.slug == slug)).rowcount > 0


def _record(row: Any) -> DraftRecord:
    return DraftRecord(row.slug, dict(row.document_json), row.base_version, float(row.saved_at))
