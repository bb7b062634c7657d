"""Exact dense search keeps one matrix per base and brings it to a new generation with only the
chunks added and removed since the one it holds: after adds, replacements and removals the
matrix so kept is the one a fresh read gives, on SQLite and PostgreSQL (the `store` fixture)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from plait.engine import retrieval, vector_matrix
from plait.knowledge.chunk import Chunk, content_hash
from plait.store import Store
from plait.store.knowledge_index import KnowledgeIndex

DIMENSIONS = 8


def chunks(prefix: str, count: int) -> list[Chunk]:
    made = []
    for position in range(count):
        heading, text = ("Guide", f"Part {position % 3}"), f"{prefix} passage {position}"
        made.append(Chunk(position, heading, text, 3, content_hash(heading, text)))
    return made


def store_document(store: Store, kb_id: str, name: str, version_text: str, made: list[Chunk]) -> int:
    """Put (or replace) a document with these chunks and their vectors; the generation made."""
    rng = np.random.default_rng(zlib.crc32(version_text.encode()))
    document, _ = store.knowledge.put_document(kb_id, name, version_text.encode(), "text/markdown")
    rows = rng.standard_normal((len(made), DIMENSIONS)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    store.knowledge_index.put_vectors(
        kb_id, {c.content_hash: rows[i].astype("<f4").tobytes() for i, c in enumerate(made)}
    )
    return store.knowledge_index.replace_chunks(document.id, document.version, made).generation


def read_afresh(store: Store, kb_id: str, generation: int) -> dict[int, bytes]:
    """The vectors of `generation` read whole, by chunk id (by an index of its own: the test
    counts the reads of the store's)."""
    return dict(KnowledgeIndex(store.db).vector_rows(kb_id, generation))


def living(matrix: vector_matrix.Matrix) -> dict[int, bytes]:
    """The rows of a matrix a search scores, by chunk id."""
    alive = np.ones(len(matrix.ids), dtype=bool) if matrix.alive is None else matrix.alive
    return {int(i): row.astype("<f4").tobytes() for i, row, a in zip(matrix.ids, matrix.rows, alive, strict=True) if a}


def test_the_matrix_follows_new_generations_with_only_what_changed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = store.knowledge_index
    kb = store.knowledge.create("matrix", embedder="minilm", dimensions=DIMENSIONS, chunk_tokens=200)
    store_document(store, kb.id, "a.md", "a1", chunks("alpha", 40))
    store_document(store, kb.id, "b.md", "b1", chunks("beta", 7))
    first = store.knowledge.get(kb.id)
    seen = retrieval._matrix(index, first, first.generation)
    assert living(seen) == read_afresh(store, kb.id, first.generation)
    assert seen.chunks == 47

    reads: list[int] = []
    whole = index.vector_rows
    monkeypatch.setattr(index, "vector_rows", lambda kb_id, as_of: reads.append(as_of) or whole(kb_id, as_of))
    monkeypatch.setattr(vector_matrix, "SPARE", 0.0)  # room for 1,024 more rows: changes are written in place
    # rows marked dead, then (a quarter of them dead) the living ones compacted into a new buffer
    changes = [
        (lambda: store_document(store, kb.id, "a.md", "a2", chunks("alpha", 36) + chunks("gamma", 4)), False),
        (lambda: store_document(store, kb.id, "c.md", "c1", chunks("delta", 5)), False),
        (lambda: index.remove_document(store.knowledge.document_named(kb.id, "b.md").id).generation, False),
        (lambda: store_document(store, kb.id, "c.md", "c2", chunks("epsilon", 3)), True),
    ]
    for change, compacted in changes:
        generation = change()
        base = store.knowledge.get(kb.id)
        assert base.generation == generation
        matrix = retrieval._matrix(index, base, generation)
        assert matrix.generation == generation
        assert living(matrix) == read_afresh(store, kb.id, generation)
        assert matrix.chunks == len(living(matrix))
        assert (matrix.rows_buffer is not seen.rows_buffer) == compacted
    assert reads == []  # every generation came from the changes, none from a whole read
    assert matrix.chunks == 36 + 4 + 3
    # the matrix a search of the first generation was given is still that generation's
    assert living(seen) == read_afresh(store, kb.id, first.generation)

    # an older generation is read as it was, and the newer matrix stays the one held
    older = retrieval._matrix(index, first, first.generation)
    assert living(older) == read_afresh(store, kb.id, first.generation)
    assert reads == [first.generation]
    held = vector_matrix.held(index, kb.id)
    assert held is not None
    assert held.generation == store.knowledge.get(kb.id).generation


def test_a_matrix_mostly_of_removed_chunks_is_compacted(store: Store) -> None:
    index = store.knowledge_index
    kb = store.knowledge.create("compact", embedder="minilm", dimensions=DIMENSIONS, chunk_tokens=200)
    store_document(store, kb.id, "a.md", "a1", chunks("alpha", 30))
    store_document(store, kb.id, "b.md", "b1", chunks("beta", 10))
    base = store.knowledge.get(kb.id)
    before = retrieval._matrix(index, base, base.generation)
    generation = index.remove_document(store.knowledge.document_named(kb.id, "a.md").id).generation
    after = retrieval._matrix(index, store.knowledge.get(kb.id), generation)
    assert after.alive is None  # rebuilt with the living rows only, in a buffer of its own
    assert after.rows_buffer is not before.rows_buffer
    assert living(after) == read_afresh(store, kb.id, generation)
    assert living(before) == read_afresh(store, kb.id, base.generation)
