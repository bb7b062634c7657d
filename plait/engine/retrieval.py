"""Searching a knowledge base: keyword, dense, or both fused by reciprocal rank, at one index
generation. The RETRIEVE node, `plait kb search` and the HTTP search all come here (the last two
as a one-node run of RETRIEVE), so what a person tests is what a graph gets.

Dense search, on PostgreSQL with pgvector, asks the database: an HNSW index over the chunks'
vectors (`plait/store/knowledge_vectors.py`), approximate at scale. Elsewhere (SQLite, PostgreSQL
without pgvector, a base of other dimensions) it is exact: the vectors of the chunks searchable
at the generation searched, held in memory between searches and brought up to each new
generation with only what changed (`vector_matrix.py`), scored with one product. A base holds at
most `MAX_EXACT_CHUNKS` chunks for exact search: past that, dense and hybrid searches are refused
with the reason, and keyword search still answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plait.engine.vector_matrix import Matrix, matrix
from plait.errors import PlaitError, Refusal
from plait.model.knowledge_nodes import RetrieveFilters, RetrieveMode
from plait.store.knowledge import KnowledgeBase, KnowledgeRepository
from plait.store.knowledge_index import KnowledgeIndex, StoredChunk

MAX_EXACT_CHUNKS = 200_000
"""Chunks of one base dense search scores exactly, in numpy (384 float32 each: about 300 MB at
the limit); pgvector's index has no such limit."""
CANDIDATES = 4
"""Each ranking fused in hybrid mode is `top_k` times this long (at least 20)."""
SECTION_CHARS = 8000
"""A hit expanded to its section holds at most this many characters of it."""


class RetrievalError(PlaitError):
    kind = Refusal.INVALID
    code = "retrieval"


@dataclass(slots=True)
class Hit:
    chunk: StoredChunk
    document: str
    score: float
    ranks: dict[str, int | None] = field(default_factory=dict)
    text: str = ""

    def as_output(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk.id,
            "document": self.document,
            "document_id": self.chunk.document_id,
            "heading_path": list(self.chunk.heading_path),
            "position": self.chunk.position,
            "text": self.text or self.chunk.text,
            "score": round(self.score, 6),
            "ranks": self.ranks,
        }


@dataclass(frozen=True, slots=True)
class Search:
    query: str
    mode: RetrieveMode
    top_k: int
    min_score: float | None
    filters: RetrieveFilters
    expand: str = "chunk"

    def recorded(self) -> dict[str, Any]:
        """The settings, as the node's input snapshot keeps them."""
        filters = self.filters.model_dump(exclude_defaults=True)
        return {"mode": str(self.mode), "top_k": self.top_k, "min_score": self.min_score, "filters": filters,
                "expand": self.expand}  # fmt: skip


def search(
    bases: KnowledgeRepository, index: KnowledgeIndex, base: KnowledgeBase, ask: Search, as_of: int | None = None
) -> list[Hit]:
    """The hits of `ask` in `base` at generation `as_of` (its generation now by default), best
    first (blocking: run it in a thread). An earlier generation is searched as it was: chunks
    are marked with the generations they were searchable between, never overwritten."""
    generation = base.generation if as_of is None else as_of
    if not 0 <= generation <= base.generation:
        raise RetrievalError(
            f"knowledge base '{base.name}' has no generation {generation}: it is at {base.generation}",
            f"give a generation from 0 to {base.generation}",
        )
    documents = {d.id: d for d in bases.documents(base.id)}
    allowed = _allowed_documents(documents, ask.filters)
    wanted = max(20, ask.top_k * CANDIDATES)
    rankings: dict[str, list[tuple[int, float]]] = {}
    if ask.mode in (RetrieveMode.KEYWORD, RetrieveMode.HYBRID):
        rankings["keyword"] = index.keyword_search(
            base.id, ask.query, wanted, generation, documents=allowed, heading=ask.filters.heading
        )
    if ask.mode in (RetrieveMode.DENSE, RetrieveMode.HYBRID):
        rankings["dense"] = _dense(index, base, generation, ask, wanted, allowed)
    scored = _fused(rankings) if ask.mode == RetrieveMode.HYBRID else next(iter(rankings.values()))
    if ask.min_score is not None:
        scored = [(i, s) for i, s in scored if s >= ask.min_score]
    rank_of = {name: {chunk_id: r for r, (chunk_id, _) in enumerate(ranked, 1)} for name, ranked in rankings.items()}
    chunks = index.chunks([i for i, _ in scored])
    hits: list[Hit] = []
    seen_sections: set[tuple[str, tuple[str, ...]]] = set()
    for chunk_id, score in scored:
        chunk = chunks.get(chunk_id)
        if chunk is None:
            continue
        if ask.expand == "section":
            section = (chunk.document_id, chunk.heading_path)
            if section in seen_sections:
                continue
            seen_sections.add(section)
        ranks = {name: rank_of[name].get(chunk_id) for name in rankings}
        hits.append(
            Hit(chunk, documents[chunk.document_id].name if chunk.document_id in documents else "", score, ranks)
        )
        if len(hits) == ask.top_k:
            break
    if ask.expand == "section":
        for hit in hits:
            hit.text = _section_text(index, hit.chunk, generation)
    return hits


def _allowed_documents(documents: dict[str, Any], filters: RetrieveFilters) -> list[str] | None:
    """The ids of the documents the filters let through (None: no document filter)."""
    if filters.documents is None and not filters.metadata:
        return None
    names = set(filters.documents or ())
    return [
        d.id
        for d in documents.values()
        if (filters.documents is None or d.name in names)
        and all(d.metadata.get(key) == value for key, value in filters.metadata.items())
    ]


def _fused(rankings: dict[str, list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """The keyword ranking counts less than the dense one (see plait.knowledge.fusion for why)."""
    from plait.knowledge.fusion import KEYWORD_WEIGHT, SEARCH_K, reciprocal_rank_fusion

    weights = [KEYWORD_WEIGHT if name == "keyword" else 1.0 for name in rankings]
    ranked = [[chunk_id for chunk_id, _ in ranking] for ranking in rankings.values()]
    return reciprocal_rank_fusion(ranked, k=SEARCH_K, weights=weights)


def _dense(
    index: KnowledgeIndex, base: KnowledgeBase, generation: int, ask: Search, wanted: int, allowed: list[str] | None
) -> list[tuple[int, float]]:
    import numpy as np

    from plait.knowledge.embed import embedder

    vectors = index.vector_search(base.dimensions)
    if vectors is not None:
        query = embedder(base.embedder).embed([ask.query])[0]
        return index.nearest(
            base.id, vectors, query, wanted, generation, documents=allowed, heading=ask.filters.heading
        )
    held = _matrix(index, base, generation)
    if held.chunks == 0:
        return []
    ids, scores = held.ids, held.scores(embedder(base.embedder).embed([ask.query])[0])
    if allowed is not None or ask.filters.heading:
        keep = set(index.chunk_ids(base.id, generation, documents=allowed, heading=ask.filters.heading))
        scores = np.where(np.isin(ids, np.fromiter(keep, dtype=np.int64, count=len(keep))), scores, -np.inf)
    count = min(wanted, len(ids))
    best = np.argpartition(-scores, count - 1)[:count]
    best = best[np.argsort(-scores[best], kind="stable")]
    return [(int(ids[i]), float(scores[i])) for i in best if np.isfinite(scores[i])]


def _matrix(index: KnowledgeIndex, base: KnowledgeBase, generation: int) -> Matrix:
    """The vectors of the chunks searchable at `generation`, kept between searches and brought
    up to each new generation with what changed (`vector_matrix.py`)."""
    return matrix(index, base, generation, MAX_EXACT_CHUNKS, lambda chunks: _too_many(base, chunks))


def _too_many(base: KnowledgeBase, chunks: int) -> RetrievalError:
    return RetrievalError(
        f"knowledge base '{base.name}' has {chunks:,} chunks; exact dense search takes at most {MAX_EXACT_CHUNKS:,}",
        "search it with mode: keyword, or split it into several knowledge bases (on PostgreSQL, pgvector "
        "searches past this limit: see docs/knowledge.md)",
    )


def _section_text(index: KnowledgeIndex, chunk: StoredChunk, generation: int) -> str:
    """The text of every chunk under the same headings in the same document, in order."""
    parts = index.section_chunks(chunk.document_id, chunk.heading_path, generation)
    text = "\n\n".join(part.text for part in parts)
    return text if len(text) <= SECTION_CHARS else text[:SECTION_CHARS]
