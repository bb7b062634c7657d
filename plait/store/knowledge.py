"""Knowledge bases in the store: the bases and their documents, each document's newest content
kept whole (an ingestion reads it from here, never from a path). Chunks, vectors and search are
`knowledge_index.py`.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Engine, and_, delete, insert, or_, select, update

from plait.errors import Refusal
from plait.store.db import is_sqlite, new_id, writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.knowledge_models import KB, KB_DOCUMENT

KB_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,119}")


class DocumentStatus(StrEnum):
    QUEUED = "queued"
    """Stored, waiting for its ingestion run."""
    INGESTING = "ingesting"
    READY = "ready"
    """Its chunks are searchable."""
    FAILED = "failed"
    """Its last ingestion failed (`error` says why); the chunks of an earlier version stay searchable."""
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    id: str
    name: str
    description: str
    embedder: str
    dimensions: int
    chunk_tokens: int
    generation: int
    created_at: float
    updated_at: float


@dataclass(frozen=True, slots=True)
class KbDocument:
    id: str
    kb_id: str
    name: str
    version: int
    media_type: str
    size: int
    content_hash: str
    metadata: dict[str, Any]
    status: DocumentStatus
    error: str | None
    run_id: str | None
    chunks: int
    created_at: float
    updated_at: float


class KnowledgeRepository:
    """Knowledge bases, documents, chunks and vectors; each write is one transaction."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)
        self._sqlite = is_sqlite(engine)

    # ------------------------------------------------------------------ bases

    def create(
        self, name: str, *, embedder: str, dimensions: int, chunk_tokens: int, description: str = ""
    ) -> KnowledgeBase:
        """A new, empty knowledge base; refused when the name is taken or not a plain name."""
        if not KB_NAME.fullmatch(name):
            raise StoreError(
                f"'{name}' is not a knowledge base name",
                "use lower-case letters, digits, '_', '.' and '-', starting with a letter or digit (at most 120)",
                kind=Refusal.INVALID,
                code="invalid_name",
            )
        now, kb_id = time.time(), new_id()
        row = {
            "id": kb_id,
            "name": name,
            "description": description[:2000],
            "embedder": embedder,
            "dimensions": dimensions,
            "chunk_tokens": chunk_tokens,
            "generation": 0,
            "created_at": now,
            "updated_at": now,
        }
        with self._writer.begin() as conn:
            if conn.execute(select(KB.c.id).where(KB.c.name == name)).first() is not None:
                raise StoreError(f"a knowledge base named '{name}' exists already", "choose another name")
            conn.execute(insert(KB).values(row))
        return self.get(kb_id)

    def get(self, ref: str) -> KnowledgeBase:
        """The knowledge base with this id or name."""
        with self._engine.connect() as conn:
            found = conn.execute(select(KB).where(or_(KB.c.id == ref, KB.c.name == ref))).first()
        if found is None:
            raise NotFoundError(f"no knowledge base '{ref}'", "list the knowledge bases to see their names")
        return _base(found)

    def bases(self) -> list[KnowledgeBase]:
        with self._engine.connect() as conn:
            return [_base(row) for row in conn.execute(select(KB).order_by(KB.c.name)).all()]

    def document_counts(self) -> dict[str, int]:
        """Each base's documents that are not removed, by base id."""
        from sqlalchemy import func

        query = (
            select(KB_DOCUMENT.c.kb_id, func.count())
            .where(KB_DOCUMENT.c.status != DocumentStatus.REMOVED.value)
            .group_by(KB_DOCUMENT.c.kb_id)
        )
        with self._engine.connect() as conn:
            return {str(kb_id): int(count) for kb_id, count in conn.execute(query)}

    def delete(self, ref: str) -> bool:
        """Delete the base with its documents, chunks and vectors; False when there was none."""
        with self._writer.begin() as conn:
            return conn.execute(delete(KB).where(or_(KB.c.id == ref, KB.c.name == ref))).rowcount > 0

    # ------------------------------------------------------------------ documents

    def put_document(
        self, kb_id: str, name: str, content: bytes, media_type: str, metadata: dict[str, Any] | None = None
    ) -> tuple[KbDocument, bool]:
        """Store a document's content under its name: new, or a new version when the content
        changed (queued for ingestion), or untouched when it is the same (False)."""
        digest = hashlib.sha256(content).hexdigest()
        now = time.time()
        with self._writer.begin() as conn:
            old = conn.execute(
                select(KB_DOCUMENT.c.id, KB_DOCUMENT.c.version, KB_DOCUMENT.c.content_hash, KB_DOCUMENT.c.status).where(
                    KB_DOCUMENT.c.kb_id == kb_id, KB_DOCUMENT.c.name == name
                )
            ).first()
            values = {
                "media_type": media_type,
                "size": len(content),
                "content_hash": digest,
                "content": content,
                "metadata_json": metadata or {},
                "status": DocumentStatus.QUEUED.value,
                "error": None,
                "updated_at": now,
            }
            if old is None:
                document_id = new_id()
                conn.execute(
                    insert(KB_DOCUMENT).values(
                        id=document_id,
                        kb_id=kb_id,
                        name=name[:255],
                        version=1,
                        run_id=None,
                        chunks=0,
                        created_at=now,
                        **values,
                    )
                )
                changed = True
            elif old.content_hash == digest and old.status not in (DocumentStatus.REMOVED, DocumentStatus.FAILED):
                document_id, changed = old.id, False
            else:
                document_id, changed = old.id, True
                conn.execute(
                    update(KB_DOCUMENT).where(KB_DOCUMENT.c.id == old.id).values(version=old.version + 1, **values)
                )
        return self.document(document_id), changed

    def document(self, document_id: str) -> KbDocument:
        with self._engine.connect() as conn:
            row = conn.execute(select(*_DOCUMENT_LISTED).where(KB_DOCUMENT.c.id == document_id)).first()
        if row is None:
            raise NotFoundError(
                f"no knowledge-base document '{document_id}'", "list a base's documents to see their ids"
            )
        return _document(row)

    def document_named(self, kb_id: str, name: str) -> KbDocument:
        with self._engine.connect() as conn:
            row = conn.execute(
                select(*_DOCUMENT_LISTED).where(KB_DOCUMENT.c.kb_id == kb_id, KB_DOCUMENT.c.name == name)
            ).first()
        if row is None:
            raise NotFoundError(f"no document '{name}' in this knowledge base", "list its documents to see their names")
        return _document(row)

    def documents(self, kb_id: str) -> list[KbDocument]:
        query = select(*_DOCUMENT_LISTED).where(KB_DOCUMENT.c.kb_id == kb_id).order_by(KB_DOCUMENT.c.name)
        with self._engine.connect() as conn:
            return [_document(row) for row in conn.execute(query).all()]

    def content(self, document_id: str) -> tuple[KbDocument, bytes]:
        """The document and its content (as of its newest version)."""
        with self._engine.connect() as conn:
            row = conn.execute(select(KB_DOCUMENT.c.content).where(KB_DOCUMENT.c.id == document_id)).first()
        if row is None:
            raise NotFoundError(
                f"no knowledge-base document '{document_id}'", "list a base's documents to see their ids"
            )
        return self.document(document_id), bytes(row.content)

    def set_status(
        self,
        document_id: str,
        version: int,
        status: DocumentStatus,
        *,
        error: str | None = None,
        run_id: str | None = None,
    ) -> bool:
        """Record how version `version` of the document's ingestion stands; False when the
        document has moved on to a newer version meanwhile (its own ingestion reports that one)."""
        values: dict[str, Any] = {"status": status.value, "error": error, "updated_at": time.time()}
        if run_id is not None:
            values["run_id"] = run_id
        where = and_(KB_DOCUMENT.c.id == document_id, KB_DOCUMENT.c.version == version)
        with self._writer.begin() as conn:
            return conn.execute(update(KB_DOCUMENT).where(where).values(values)).rowcount == 1


_DOCUMENT_LISTED = [column for column in KB_DOCUMENT.c if column.name != "content"]


def _base(row: Any) -> KnowledgeBase:
    return KnowledgeBase(
        row.id,
        row.name,
        row.description,
        row.embedder,
        int(row.dimensions),
        int(row.chunk_tokens),
        int(row.generation),
        float(row.created_at),
        float(row.updated_at),
    )


def _document(row: Any) -> KbDocument:
    return KbDocument(
        row.id,
        row.kb_id,
        row.name,
        int(row.version),
        row.media_type,
        int(row.size),
        row.content_hash,
        dict(row.metadata_json or {}),
        DocumentStatus(row.status),
        row.error,
        row.run_id,
        int(row.chunks),
        float(row.created_at),
        float(row.updated_at),
    )
