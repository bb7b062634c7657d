"""Knowledge bases in the store, SQLite and PostgreSQL (the `store` fixture): documents get new
versions only when their content changes; replacing a document's chunks keeps the unchanged
ones, marks the dropped ones removed and raises the generation; keyword search finds words in
headings and text, and a search of an earlier generation sees that generation's chunks."""

from __future__ import annotations

import pytest

from plait.knowledge.chunk import Chunk, content_hash
from plait.store import NotFoundError, Store, StoreError
from plait.store.knowledge import DocumentStatus


def chunk(position: int, text: str, heading: tuple[str, ...] = ("Guide",)) -> Chunk:
    return Chunk(position, heading, text, len(text.split()), content_hash(heading, text))


def vectors_for(chunks: list[Chunk]) -> dict[str, bytes]:
    return {c.content_hash: bytes(16) for c in chunks}


def test_a_document_gets_a_new_version_only_when_its_content_changes(store: Store) -> None:
    kb = store.knowledge.create("manuals", embedder="minilm", dimensions=4, chunk_tokens=200)
    assert store.knowledge.get("manuals") == kb == store.knowledge.get(kb.id)
    first, changed = store.knowledge.put_document(kb.id, "a.md", b"# A\nalpha", "text/markdown", {"team": "x"})
    assert changed
    assert first.version == 1
    assert first.status == DocumentStatus.QUEUED
    same, changed = store.knowledge.put_document(kb.id, "a.md", b"# A\nalpha", "text/markdown")
    assert not changed
    assert same.version == 1
    newer, changed = store.knowledge.put_document(kb.id, "a.md", b"# A\nbeta", "text/markdown")
    assert changed
    assert newer.version == 2
    assert newer.id == first.id
    assert store.knowledge.content(first.id)[1] == b"# A\nbeta"
    assert not store.knowledge.set_status(first.id, 1, DocumentStatus.FAILED, error="old")  # moved on: not recorded
    assert store.knowledge.set_status(first.id, 2, DocumentStatus.FAILED, error="bad pdf", run_id="r1")
    failed = store.knowledge.document(first.id)
    assert (failed.status, failed.error, failed.run_id) == (DocumentStatus.FAILED, "bad pdf", "r1")
    with pytest.raises(StoreError, match="exists already"):
        store.knowledge.create("manuals", embedder="minilm", dimensions=4, chunk_tokens=200)
    with pytest.raises(StoreError, match="not a knowledge base name"):
        store.knowledge.create("Bad Name", embedder="minilm", dimensions=4, chunk_tokens=200)
    assert store.knowledge.delete("manuals")
    with pytest.raises(NotFoundError):
        store.knowledge.document(first.id)


def test_replacing_chunks_keeps_unchanged_ones_and_marks_dropped_ones_removed(store: Store) -> None:
    kb = store.knowledge.create("notes", embedder="minilm", dimensions=4, chunk_tokens=200)
    doc, _ = store.knowledge.put_document(kb.id, "n.md", b"v1", "text/markdown")
    index = store.knowledge_index
    v1 = [chunk(0, "install the package with pip"), chunk(1, "configure the server port"), chunk(2, "old notes")]
    with pytest.raises(StoreError, match="no vector"):
        index.replace_chunks(doc.id, 1, v1)
    assert index.missing_vectors(kb.id, [c.content_hash for c in v1]) == {c.content_hash for c in v1}
    index.put_vectors(kb.id, vectors_for(v1))
    index.put_vectors(kb.id, vectors_for(v1))  # again: nothing changes
    assert index.missing_vectors(kb.id, [c.content_hash for c in v1]) == set()
    first = index.replace_chunks(doc.id, 1, v1)
    assert (first.generation, first.added, first.kept, first.removed) == (1, 3, 0, 0)
    assert store.knowledge.document(doc.id).status == DocumentStatus.READY
    old_ids = {c.text: c.id for c in index.document_chunks(doc.id)}

    store.knowledge.put_document(kb.id, "n.md", b"v2", "text/markdown")
    v2 = [chunk(0, "configure the server port"), chunk(1, "install the package with pip"), chunk(2, "new advice")]
    index.put_vectors(kb.id, vectors_for(v2[2:]))
    second = index.replace_chunks(doc.id, 2, v2)
    assert (second.generation, second.added, second.kept, second.removed) == (2, 1, 2, 1)
    live = index.document_chunks(doc.id)
    expected = [(0, "configure the server port"), (1, "install the package with pip"), (2, "new advice")]
    assert [(c.position, c.text) for c in live] == expected
    assert old_ids["configure the server port"] in {c.id for c in live}  # kept, not embedded again
    everything = index.document_chunks(doc.id, live_only=False)
    gone = [c for c in everything if not c.live]
    assert [(c.text, c.removed_generation) for c in gone] == [("old notes", 2)]
    unchanged = index.replace_chunks(doc.id, 2, v2)
    assert (unchanged.generation, unchanged.added, unchanged.removed) == (2, 0, 0)  # no new generation


def test_keyword_search_finds_words_and_sees_the_generation_it_is_asked_for(store: Store) -> None:
    kb = store.knowledge.create("kw", embedder="minilm", dimensions=4, chunk_tokens=200)
    doc, _ = store.knowledge.put_document(kb.id, "k.md", b"v1", "text/markdown")
    index = store.knowledge_index
    v1 = [chunk(0, "Backups run every night at two", ("Operations", "Backups")),
          chunk(1, "The cache keeps answers for a week", ("Caching",))]  # fmt: skip
    index.put_vectors(kb.id, vectors_for(v1))
    index.replace_chunks(doc.id, 1, v1)
    hits = index.keyword_search(kb.id, "when do backups run?", 10, as_of=1)
    assert [index.chunks([i])[i].text for i, _ in hits] == ["Backups run every night at two"]
    assert [c for c, _ in index.keyword_search(kb.id, "caching", 10, as_of=1)]  # a heading word
    assert index.keyword_search(kb.id, "?? !!", 10, as_of=1) == []
    assert index.keyword_search(kb.id, "the and for at", 10, as_of=1) == []  # stop words match nothing, on both
    assert index.keyword_search(kb.id, 'quote" OR "injection', 10, as_of=1) == []
    store.knowledge.put_document(kb.id, "k.md", b"v2", "text/markdown")
    v2 = [chunk(0, "The cache keeps answers for a week", ("Caching",))]
    index.replace_chunks(doc.id, 2, v2)
    assert index.keyword_search(kb.id, "backups", 10, as_of=2) == []
    assert len(index.keyword_search(kb.id, "backups", 10, as_of=1)) == 1  # as the first generation saw it
    assert [i for i, _ in index.vector_rows(kb.id, as_of=2)] == [c.id for c in index.document_chunks(doc.id)]
    removed = index.remove_document(doc.id)
    assert removed.removed == 1
    assert store.knowledge.document(doc.id).status == DocumentStatus.REMOVED
    assert index.keyword_search(kb.id, "cache", 10, as_of=removed.generation) == []
