"""The searchable side of knowledge bases in the store: vectors by content hash, chunks with
the generations they were searchable between, and the keyword half of search.

Every change a search can see raises the base's `generation` in the transaction that makes it:
a search says which generation it saw, and the same search can be asked again of that
generation (`as_of`) while the document is kept. Writing vectors (`put_vectors`) is idempotent
and visible to no search by itself: an ingestion killed while embedding keeps what it embedded
and finds it when it resumes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, and_, bindparam, insert, or_, select, text, update
from sqlalchemy.sql.elements import ColumnElement

from plait.knowledge.chunk import Chunk
from plait.store import knowledge_vectors
from plait.store.db import is_sqlite, writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.knowledge import DocumentStatus
from plait.store.knowledge_models import KB, KB_CHUNK, KB_DOCUMENT, KB_VECTOR
from plait.store.knowledge_vectors import VectorIndex

_STOP_WORDS = (
    "a about above after again against all am an and any are as at be because been before being below between "
    "both but by can did do does doing down during each few for from further had has have having he her here "
    "hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now "
    "of off on once only or other our ours ourselves out over own same she should so some such than that the "
    "their theirs them themselves then there these they this those through to too under until up very was we "
    "were what when where which while who whom why will with you your yours yourself yourselves"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
"""Words a keyword query leaves out: they match nearly every chunk, so they only add noise and
time. PostgreSQL's English configuration drops the same kind of words; this keeps SQLite alike."""
MAX_KEYWORD_TERMS = 32
"""Words of a keyword query beyond these are left out (each is one more posting list to read)."""


@dataclass(frozen=True, slots=True)
class StoredChunk:
    id: int
    kb_id: str
    document_id: str
    document_version: int
    position: int
    heading_path: tuple[str, ...]
    text: str
    tokens: int
    content_hash: str
    live: bool
    added_generation: int
    removed_generation: int | None


@dataclass(frozen=True, slots=True)
class IndexChange:
    """What `replace_chunks` did: the generation it made, chunks added, kept and marked removed."""

    generation: int
    added: int
    kept: int
    removed: int


class KnowledgeIndex:
    """The searchable side of knowledge bases: vectors by content hash, chunks, and keyword search."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)
        self._sqlite = is_sqlite(engine)
        self._vector_index: list[VectorIndex | None] = []

    def vector_index(self) -> VectorIndex | None:
        """pgvector's HNSW index over the chunks, when this database has it (asked once)."""
        if not self._vector_index:
            if self._sqlite:
                self._vector_index.append(None)
            else:
                with self._engine.connect() as conn:
                    self._vector_index.append(knowledge_vectors.vector_index(conn))
        return self._vector_index[0]

    def vector_search(self, dimensions: int) -> VectorIndex | None:
        """The pgvector index that serves dense search of a base whose vectors have `dimensions`
        (None: search it exactly, in numpy)."""
        return self.vector_index() if dimensions == knowledge_vectors.DIMENSIONS else None

    def remove_document(self, document_id: str) -> IndexChange:
        """Mark the document and its chunks removed (searchable no more; kept for earlier generations)."""
        with self._writer.begin() as conn:
            found = conn.execute(
                select(KB_DOCUMENT.c.kb_id, KB_DOCUMENT.c.status).where(KB_DOCUMENT.c.id == document_id)
            ).first()
            if found is None:
                raise NotFoundError(f"no knowledge-base document '{document_id}'", "list a base's documents")
            if found.status == DocumentStatus.REMOVED:  # removed already: nothing changes
                return IndexChange(_current_generation(conn, found.kb_id), 0, 0, 0)
            generation = _next_generation(conn, found.kb_id)
            removed = _remove_chunks(conn, [KB_CHUNK.c.document_id == document_id], generation)
            conn.execute(
                update(KB_DOCUMENT)
                .where(KB_DOCUMENT.c.id == document_id)
                .values(status=DocumentStatus.REMOVED.value, chunks=0, updated_at=time.time())
            )
        return IndexChange(generation, 0, 0, removed)

    def missing_vectors(self, kb_id: str, hashes: Iterable[str]) -> set[str]:
        """The content hashes among `hashes` that have no vector in this base yet."""
        wanted = set(hashes)
        have: set[str] = set()
        with self._engine.connect() as conn:
            for part in _parts(sorted(wanted)):
                query = select(KB_VECTOR.c.content_hash).where(
                    KB_VECTOR.c.kb_id == kb_id, KB_VECTOR.c.content_hash.in_(part)
                )
                have.update(conn.execute(query).scalars())
        return wanted - have

    def put_vectors(self, kb_id: str, vectors: dict[str, bytes]) -> None:
        """Keep vectors by content hash; one already kept is left as it is."""
        if not vectors:
            return
        now = time.time()
        with self._writer.begin() as conn:
            have = set(
                conn.execute(
                    select(KB_VECTOR.c.content_hash).where(
                        KB_VECTOR.c.kb_id == kb_id, KB_VECTOR.c.content_hash.in_(list(vectors))
                    )
                ).scalars()
            )
            rows = [
                {"kb_id": kb_id, "content_hash": h, "vector": v, "created_at": now}
                for h, v in vectors.items()
                if h not in have
            ]
            if rows:
                conn.execute(insert(KB_VECTOR), rows)

    def replace_chunks(self, document_id: str, version: int, chunks: Sequence[Chunk]) -> IndexChange:
        """Make `chunks` the document's searchable chunks, in one transaction: a chunk whose
        content hash it has already is kept (moved to its new position), the others are added,
        and those the new list lacks are marked removed. Every new hash must have its vector."""
        with self._writer.begin() as conn:
            doc = conn.execute(
                select(KB_DOCUMENT.c.kb_id, KB_DOCUMENT.c.version, KB.c.dimensions)
                .join(KB, KB.c.id == KB_DOCUMENT.c.kb_id)
                .where(KB_DOCUMENT.c.id == document_id)
            ).first()
            if doc is None or doc.version != version:
                raise StoreError(
                    f"document '{document_id}' has a newer version than {version}", "ingest the newest version"
                )
            live = conn.execute(
                select(KB_CHUNK.c.id, KB_CHUNK.c.content_hash)
                .where(KB_CHUNK.c.document_id == document_id, KB_CHUNK.c.status == "live")
                .order_by(KB_CHUNK.c.position)
            ).all()
            by_hash: dict[str, list[int]] = {}
            for row in live:
                by_hash.setdefault(row.content_hash, []).append(row.id)
            keep: list[tuple[int, Chunk]] = []
            add: list[Chunk] = []
            for chunk in chunks:
                ids = by_hash.get(chunk.content_hash)
                if ids:
                    keep.append((ids.pop(0), chunk))
                else:
                    add.append(chunk)
            gone = [i for ids in by_hash.values() for i in ids]
            unchanged = not add and not gone
            generation = _current_generation(conn, doc.kb_id) if unchanged else _next_generation(conn, doc.kb_id)
            vectors = self.vector_search(doc.dimensions)
            held = _vectors_held(conn, doc.kb_id, {c.content_hash for c in add}, read=vectors is not None)
            missing = {c.content_hash for c in add} - set(held)
            if missing:
                raise StoreError(
                    f"{len(missing)} chunks of document '{document_id}' have no vector", "embed them first"
                )
            for chunk_id, chunk in keep:
                conn.execute(
                    update(KB_CHUNK)
                    .where(KB_CHUNK.c.id == chunk_id)
                    .values(position=chunk.position, document_version=version)
                )
            removed = _remove_chunks(conn, [KB_CHUNK.c.id.in_(gone)], generation) if gone else 0
            now = time.time()
            if add:
                rows = [_chunk_row(doc.kb_id, document_id, version, c, generation, now) for c in add]
                if vectors is None:
                    conn.execute(insert(KB_CHUNK), rows)
                else:  # each chunk with its vector, in pgvector's column
                    literal = knowledge_vectors.literal
                    embedded = [row | {"embedding": literal(held[row["content_hash"]])} for row in rows]
                    conn.execute(insert(knowledge_vectors.chunk_table(vectors)), embedded)
            conn.execute(
                update(KB_DOCUMENT)
                .where(KB_DOCUMENT.c.id == document_id)
                .values(status=DocumentStatus.READY.value, error=None, chunks=len(chunks), updated_at=now)
            )
        return IndexChange(generation, len(add), len(keep), removed)

    def chunks(self, ids: Sequence[int]) -> dict[int, StoredChunk]:
        """The chunks with these ids (removed ones included), by id."""
        found: dict[int, StoredChunk] = {}
        with self._engine.connect() as conn:
            for part in _parts(list(ids)):
                found.update(
                    (row.id, _chunk(row)) for row in conn.execute(select(KB_CHUNK).where(KB_CHUNK.c.id.in_(part)))
                )
        return found

    def document_chunks(self, document_id: str, *, live_only: bool = True) -> list[StoredChunk]:
        query = select(KB_CHUNK).where(KB_CHUNK.c.document_id == document_id)
        if live_only:
            query = query.where(KB_CHUNK.c.status == "live")
        with self._engine.connect() as conn:
            return [_chunk(row) for row in conn.execute(query.order_by(KB_CHUNK.c.status, KB_CHUNK.c.position))]

    def vector_rows(self, kb_id: str, as_of: int) -> list[tuple[int, bytes]]:
        """(chunk id, vector) of every chunk searchable at generation `as_of`."""
        query = (
            select(KB_CHUNK.c.id, KB_VECTOR.c.vector)
            .join(
                KB_VECTOR,
                and_(KB_VECTOR.c.kb_id == KB_CHUNK.c.kb_id, KB_VECTOR.c.content_hash == KB_CHUNK.c.content_hash),
            )
            .where(KB_CHUNK.c.kb_id == kb_id, *_visible(as_of))
            .order_by(KB_CHUNK.c.id)
        )
        with self._engine.connect() as conn:
            return [(int(row.id), bytes(row.vector)) for row in conn.execute(query)]

    def vector_rows_changed(self, kb_id: str, since: int, until: int) -> tuple[list[tuple[int, bytes]], list[int]]:
        """What changed between generations `since` and `until` (later) of the chunks
        `vector_rows` gives: (chunk id, vector) of those searchable at `until` but not at
        `since`, and the ids of those searchable at `since` but not at `until`."""
        added = (
            select(KB_CHUNK.c.id, KB_VECTOR.c.vector)
            .join(
                KB_VECTOR,
                and_(KB_VECTOR.c.kb_id == KB_CHUNK.c.kb_id, KB_VECTOR.c.content_hash == KB_CHUNK.c.content_hash),
            )
            .where(KB_CHUNK.c.kb_id == kb_id, KB_CHUNK.c.added_generation > since, *_visible(until))
            .order_by(KB_CHUNK.c.id)
        )
        removed = select(KB_CHUNK.c.id).where(
            KB_CHUNK.c.kb_id == kb_id,
            KB_CHUNK.c.removed_generation > since,
            KB_CHUNK.c.removed_generation <= until,
            KB_CHUNK.c.added_generation <= since,
        )
        with self._engine.connect() as conn:
            rows = [(int(row.id), bytes(row.vector)) for row in conn.execute(added)]
            return rows, [int(i) for i in conn.execute(removed).scalars()]

    def keyword_search(
        self,
        kb_id: str,
        query: str,
        limit: int,
        as_of: int,
        *,
        documents: Sequence[str] | None = None,
        heading: str | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk id, score) of the chunks matching any word of `query` best, at generation
        `as_of`, of `documents` only and under `heading` only when given: BM25 over heading and
        text on SQLite, `ts_rank_cd` on PostgreSQL; higher is better."""
        found = re.findall(r"[^\W_]+", query.lower())
        words = list(dict.fromkeys(w for w in found if len(w) > 1 and w not in STOP_WORDS))
        if not words or documents == []:
            return []
        filters, params = _filters(documents, heading)
        where = ["c.kb_id = :kb", *_VISIBLE_SQL, *filters]
        params |= {"kb": kb_id, "limit": limit, "as_of": as_of}
        if self._sqlite:
            params["match"] = " OR ".join(f'"{w}"' for w in words[:MAX_KEYWORD_TERMS])
            sql = (
                "SELECT c.id, -bm25(kb_chunk_fts) AS score FROM kb_chunk_fts "
                "JOIN kb_chunk c ON c.id = kb_chunk_fts.rowid WHERE kb_chunk_fts MATCH :match "
                f"AND {' AND '.join(where)} ORDER BY score DESC, c.id LIMIT :limit"
            )
        else:
            # `tsv`: the stored `tsvector` of heading and text, which the GIN index covers
            params["match"] = " | ".join(words[:MAX_KEYWORD_TERMS])
            sql = (
                "SELECT c.id, ts_rank_cd(c.tsv, q) AS score FROM kb_chunk c, to_tsquery('english', :match) q "
                f"WHERE c.tsv @@ q AND {' AND '.join(where)} ORDER BY score DESC, c.id LIMIT :limit"
            )
        statement = text(sql)
        if documents is not None:
            statement = statement.bindparams(bindparam("documents", expanding=True))
        with self._engine.connect() as conn:
            rows = conn.execute(statement, params).all()
        return [(int(row.id), float(row.score)) for row in rows]

    def nearest(
        self,
        kb_id: str,
        vectors: VectorIndex,
        query: Sequence[float],
        limit: int,
        as_of: int,
        *,
        documents: Sequence[str] | None = None,
        heading: str | None = None,
    ) -> list[tuple[int, float]]:
        """(chunk id, cosine similarity) of the `limit` chunks nearest the unit vector `query`
        at generation `as_of`, of `documents` and under `heading` when given, through pgvector
        (`knowledge_vectors.nearest`); higher is better."""
        if documents == []:
            return []
        filters, params = _filters(documents, heading)
        return knowledge_vectors.nearest(self._engine, vectors, kb_id, query, limit, as_of, filters, params)

    def chunk_ids(
        self, kb_id: str, as_of: int, *, documents: Sequence[str] | None = None, heading: str | None = None
    ) -> list[int]:
        """The ids of the chunks searchable at `as_of`, of `documents` and under `heading` when given."""
        query = select(KB_CHUNK.c.id).where(KB_CHUNK.c.kb_id == kb_id, *_visible(as_of))
        if documents is not None:
            query = query.where(KB_CHUNK.c.document_id.in_(list(documents)))
        if heading:
            under = KB_CHUNK.c.heading.like(_like_prefix(heading + " > "), escape="\\")
            query = query.where(or_(KB_CHUNK.c.heading == heading, under))
        with self._engine.connect() as conn:
            return [int(i) for i in conn.execute(query).scalars()]

    def section_chunks(self, document_id: str, heading_path: Sequence[str], as_of: int) -> list[StoredChunk]:
        """The chunks of a document under exactly these headings at `as_of`, in order."""
        query = select(KB_CHUNK).where(
            KB_CHUNK.c.document_id == document_id, KB_CHUNK.c.heading == " > ".join(heading_path), *_visible(as_of)
        )
        with self._engine.connect() as conn:
            return [_chunk(row) for row in conn.execute(query.order_by(KB_CHUNK.c.position))]

    def documents_changed_since(self, kb_id: str, generation: int) -> set[str]:
        """The ids of the documents of which a chunk was added or removed after `generation`
        (a deleted document's chunks are deleted with it: it is not among them)."""
        changed = or_(KB_CHUNK.c.added_generation > generation, KB_CHUNK.c.removed_generation > generation)
        query = select(KB_CHUNK.c.document_id).where(KB_CHUNK.c.kb_id == kb_id, changed).distinct()
        with self._engine.connect() as conn:
            return set(conn.execute(query).scalars())


def _filters(documents: Sequence[str] | None, heading: str | None) -> tuple[list[str], dict[str, Any]]:
    """SQL conditions over chunk `c` (and their parameters) for a search's document and heading
    filters; `documents` binds as an expanding parameter."""
    where: list[str] = []
    params: dict[str, Any] = {}
    if documents is not None:
        where.append("c.document_id IN :documents")
        params["documents"] = list(documents)
    if heading:
        where.append("(c.heading = :heading OR c.heading LIKE :under ESCAPE '\\')")
        params |= {"heading": heading, "under": _like_prefix(heading + " > ")}
    return where, params


_VISIBLE_SQL = ("c.added_generation <= :as_of", "(c.removed_generation IS NULL OR c.removed_generation > :as_of)")


def _visible(as_of: int) -> list[ColumnElement[bool]]:
    """Chunks searchable at generation `as_of`."""
    return [
        KB_CHUNK.c.added_generation <= as_of,
        or_(KB_CHUNK.c.removed_generation.is_(None), KB_CHUNK.c.removed_generation > as_of),
    ]


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern for texts starting with `prefix` (its own % and _ matched literally)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _parts(values: list[Any], size: int = 500) -> Iterable[list[Any]]:
    """Values in slices an `IN (...)` takes on every backend."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _current_generation(conn: Connection, kb_id: str) -> int:
    return int(conn.execute(select(KB.c.generation).where(KB.c.id == kb_id)).scalar_one())


def _next_generation(conn: Connection, kb_id: str) -> int:
    """Raise the base's generation in this transaction (which also serialises its writers)."""
    bump = update(KB).where(KB.c.id == kb_id).values(generation=KB.c.generation + 1, updated_at=time.time())
    return int(conn.execute(bump.returning(KB.c.generation)).scalar_one())


def _remove_chunks(conn: Connection, where: list[ColumnElement[bool]], generation: int) -> int:
    marked = update(KB_CHUNK).where(KB_CHUNK.c.status == "live", *where)
    return int(conn.execute(marked.values(status="removed", removed_generation=generation)).rowcount)


def _vectors_held(conn: Connection, kb_id: str, hashes: set[str], *, read: bool) -> dict[str, bytes]:
    """The hashes among `hashes` the base holds a vector for, with the vector when `read`."""
    held: dict[str, bytes] = {}
    columns = (KB_VECTOR.c.content_hash, KB_VECTOR.c.vector) if read else (KB_VECTOR.c.content_hash,)
    for part in _parts(sorted(hashes)):
        query = select(*columns).where(KB_VECTOR.c.kb_id == kb_id, KB_VECTOR.c.content_hash.in_(part))
        held.update((row.content_hash, bytes(row.vector) if read else b"") for row in conn.execute(query))
    return held


def _chunk_row(kb_id: str, document_id: str, version: int, chunk: Chunk, generation: int, now: float) -> dict[str, Any]:
    return {
        "kb_id": kb_id,
        "document_id": document_id,
        "document_version": version,
        "position": chunk.position,
        "heading_path_json": list(chunk.heading_path),
        "heading": " > ".join(chunk.heading_path),
        "text": chunk.text,
        "tokens": chunk.tokens,
        "content_hash": chunk.content_hash,
        "status": "live",
        "added_generation": generation,
        "removed_generation": None,
        "created_at": now,
    }


def _chunk(row: Any) -> StoredChunk:
    return StoredChunk(
        int(row.id),
        row.kb_id,
        row.document_id,
        int(row.document_version),
        int(row.position),
        tuple(row.heading_path_json or ()),
        row.text,
        int(row.tokens),
        row.content_hash,
        row.status == "live",
        int(row.added_generation),
        None if row.removed_generation is None else int(row.removed_generation),
    )
