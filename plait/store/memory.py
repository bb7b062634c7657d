"""The facts a chat's memory keeps: subject, predicate, object and the sentence saying it, with
where each came from. Nothing here deletes a fact: a correction stores a new fact that
supersedes the old one (in one transaction, refused when the old one is not active any more),
a newly said value of a single-valued fact supersedes the value held ("I moved to Lyon"), and a
retraction marks one retracted. Only active facts are recalled; the others stay as the fact's
history.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Engine, insert, select, update

from plait.errors import Refusal
from plait.store.db import new_id, writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.knowledge_models import MEMORY_FACT

MAX_FACT_CHARS = 2000
"""A fact's sentence, and each of its parts, at most this long."""


class FactStatus(StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    """A correction replaced it (`superseded_by`)."""
    RETRACTED = "retracted"
    """A person said it was wrong, with nothing in its place."""


@dataclass(frozen=True, slots=True)
class NewFact:
    """A fact to remember; `entities` are the subject's and object's names, normalised."""

    subject: str
    predicate: str
    object: str
    text: str
    entities: tuple[str, ...]
    valid_from: float | None = None
    vector: bytes | None = None
    embedder: str | None = None
    single_valued: bool = False
    """The subject has one object for this predicate at a time (lives in, is due on): stored, it
    supersedes the scope's active facts with the same subject and predicate."""


@dataclass(frozen=True, slots=True)
class Fact:
    id: str
    scope: str
    subject: str
    predicate: str
    object: str
    text: str
    valid_from: float | None
    entities: tuple[str, ...]
    vector: bytes | None
    embedder: str | None
    status: FactStatus
    supersedes: str | None
    superseded_by: str | None
    source: dict[str, Any]
    created_by: str
    note: str | None
    created_at: float
    updated_at: float


class MemoryRepository:
    """Facts by scope; each write is one transaction."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def add(self, scope: str, facts: list[NewFact], *, source: dict[str, Any], by: str) -> list[Fact]:
        """Remember `facts` in `scope`, each with `source` (the messages, run and node run it came
        from), in one transaction. A single-valued fact supersedes the active ones with its
        subject and predicate; one that became true before the value held (`valid_from`) is kept
        as that value's history instead, superseded by it."""
        now, ids = time.time(), []
        with self._writer.begin() as conn:
            for i, fact in enumerate(facts):  # a microsecond apart: listed in the order given
                ids.append(self._insert(conn, scope, fact, source, by, now + i * 1e-6))
        return [self.get(fact_id) for fact_id in ids]

    def _insert(self, conn: Any, scope: str, fact: NewFact, source: dict[str, Any], by: str, now: float) -> str:
        fact_id = new_id()
        held = self._same_subject_and_predicate(conn, scope, fact) if fact.single_valued else []
        newer = [f for f in held if _earlier(fact.valid_from, f.valid_from)]
        if newer:  # older news: history of the value held now, never recalled
            row = _row(fact_id, scope, fact, source, by, None, now) | {
                "status": FactStatus.SUPERSEDED.value, "superseded_by": newer[-1].id}  # fmt: skip
            conn.execute(insert(MEMORY_FACT).values(row))
            return fact_id
        conn.execute(insert(MEMORY_FACT).values(_row(fact_id, scope, fact, source, by, None, now,
                                                     supersedes=held[-1].id if held else None)))  # fmt: skip
        if held:
            superseded = {"status": FactStatus.SUPERSEDED.value, "superseded_by": fact_id, "updated_at": now}
            conn.execute(update(MEMORY_FACT).where(MEMORY_FACT.c.id.in_([f.id for f in held])).values(superseded))
        return fact_id

    def _same_subject_and_predicate(self, conn: Any, scope: str, fact: NewFact) -> list[Fact]:
        """The scope's active facts with `fact`'s subject and predicate and another object, oldest first."""
        query = select(MEMORY_FACT).where(
            MEMORY_FACT.c.scope == scope, MEMORY_FACT.c.status == FactStatus.ACTIVE.value,
            MEMORY_FACT.c.subject == fact.subject, MEMORY_FACT.c.predicate == fact.predicate,
            MEMORY_FACT.c.object != fact.object)  # fmt: skip
        rows = conn.execute(query.order_by(MEMORY_FACT.c.created_at, MEMORY_FACT.c.id).with_for_update()).all()
        return [_fact(row) for row in rows]

    def get(self, fact_id: str) -> Fact:
        with self._engine.connect() as conn:
            row = conn.execute(select(MEMORY_FACT).where(MEMORY_FACT.c.id == fact_id)).first()
        if row is None:
            raise NotFoundError(f"no remembered fact '{fact_id}'", "list a scope's facts to see their ids")
        return _fact(row)

    def facts(self, scope: str, *, history: bool = False, limit: int = 10_000) -> list[Fact]:
        """The scope's active facts, oldest first (`history`: superseded and retracted ones too);
        past `limit`, the newest `limit` of them."""
        query = select(MEMORY_FACT).where(MEMORY_FACT.c.scope == scope)
        if not history:
            query = query.where(MEMORY_FACT.c.status == FactStatus.ACTIVE.value)
        newest = query.order_by(MEMORY_FACT.c.created_at.desc(), MEMORY_FACT.c.id.desc()).limit(limit)
        with self._engine.connect() as conn:
            rows = conn.execute(newest).all()
        return [_fact(row) for row in reversed(rows)]

    def scopes(self) -> list[tuple[str, int]]:
        """Every scope with its count of active facts."""
        from sqlalchemy import func

        query = (
            select(MEMORY_FACT.c.scope, func.count())
            .where(MEMORY_FACT.c.status == FactStatus.ACTIVE.value)
            .group_by(MEMORY_FACT.c.scope)
            .order_by(MEMORY_FACT.c.scope)
        )
        with self._engine.connect() as conn:
            return [(str(scope), int(count)) for scope, count in conn.execute(query)]

    def supersede(self, fact_id: str, fact: NewFact, *, by: str, note: str | None) -> Fact:
        """Store `fact` in place of the active fact `fact_id`, which becomes superseded by it."""
        now, new = time.time(), new_id()
        with self._writer.begin() as conn:
            old = self._active(conn, fact_id, "correct")
            source = {"corrects": fact_id, "by": by}
            conn.execute(
                insert(MEMORY_FACT).values(_row(new, old.scope, fact, source, by, note, now, supersedes=fact_id))
            )
            conn.execute(update(MEMORY_FACT).where(MEMORY_FACT.c.id == fact_id)
                         .values(status=FactStatus.SUPERSEDED.value, superseded_by=new, updated_at=now))  # fmt: skip
        return self.get(new)

    def retract(self, fact_id: str, *, by: str, note: str | None) -> Fact:
        """Mark the active fact `fact_id` retracted: it is never recalled again."""
        with self._writer.begin() as conn:
            fact = self._active(conn, fact_id, "retract")
            source = {**fact.source, "retracted_by": by}
            conn.execute(update(MEMORY_FACT).where(MEMORY_FACT.c.id == fact_id).values(
                status=FactStatus.RETRACTED.value, note=note if note is not None else fact.note, source_json=source,
                updated_at=time.time()))  # fmt: skip
        return self.get(fact_id)

    def with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Ids starting with `prefix` (at most `limit`: two say it is not unique)."""
        if len(prefix) < 4:
            return []
        query = select(MEMORY_FACT.c.id).where(MEMORY_FACT.c.id.startswith(prefix, autoescape=True)).limit(limit)
        with self._engine.connect() as conn:
            return [str(i) for i in conn.execute(query).scalars()]

    def history(self, fact_id: str) -> list[Fact]:
        """The fact with the ones it superseded and the ones that superseded it, oldest first."""
        chain = [self.get(fact_id)]
        while chain[0].supersedes is not None:
            chain.insert(0, self.get(chain[0].supersedes))
        while chain[-1].superseded_by is not None:
            chain.append(self.get(chain[-1].superseded_by))
        return chain

    def _active(self, conn: Any, fact_id: str, action: str) -> Fact:
        row = conn.execute(select(MEMORY_FACT).where(MEMORY_FACT.c.id == fact_id).with_for_update()).first()
        if row is None:
            raise NotFoundError(f"no remembered fact '{fact_id}'", "list a scope's facts to see their ids")
        fact = _fact(row)
        if fact.status != FactStatus.ACTIVE:
            newer = f" by {fact.superseded_by}" if fact.superseded_by else ""
            raise StoreError(f"fact {fact_id} was {fact.status}{newer}: only an active fact can be {action}ed",
                             f"{action} the fact that is active now", kind=Refusal.CONFLICT)  # fmt: skip
        return fact


def _row(
    fact_id: str, scope: str, fact: NewFact, source: dict[str, Any], by: str, note: str | None, now: float,
    *, supersedes: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    for part in ("subject", "predicate", "object", "text"):
        if len(getattr(fact, part)) > MAX_FACT_CHARS:
            raise StoreError(f"a fact's {part} has at most {MAX_FACT_CHARS} characters", "say it shorter",
                             kind=Refusal.INVALID, code="invalid_fact")  # fmt: skip
    return {"id": fact_id, "scope": scope[:200], "subject": fact.subject, "predicate": fact.predicate,
            "object": fact.object, "text": fact.text, "valid_from": fact.valid_from,
            "entities_json": list(fact.entities), "vector": fact.vector, "embedder": fact.embedder,
            "status": FactStatus.ACTIVE.value, "supersedes": supersedes, "superseded_by": None,
            "source_json": source, "created_by": by[:120], "note": note, "created_at": now,
            "updated_at": now}  # fmt: skip


def _earlier(when: float | None, than: float | None) -> bool:
    return when is not None and than is not None and when < than


def _fact(row: Any) -> Fact:
    return Fact(row.id, row.scope, row.subject, row.predicate, row.object, row.text,
                None if row.valid_from is None else float(row.valid_from), tuple(row.entities_json or ()),
                None if row.vector is None else bytes(row.vector), row.embedder, FactStatus(row.status),
                row.supersedes, row.superseded_by, dict(row.source_json or {}), row.created_by, row.note,
                float(row.created_at), float(row.updated_at))  # fmt: skip
