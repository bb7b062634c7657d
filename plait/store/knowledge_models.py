"""The tables of knowledge bases, on the store's one `METADATA` (`models.py` imports this module).

A knowledge base's chunks are numbered by an integer key rather than a UUID: keyword search on
SQLite is an FTS5 index whose rowid is the chunk's key, and dense search turns hits into rows of
a vector matrix by that key. Vectors live apart from chunks, keyed by the text's content hash: a
chunk that comes back unchanged in a new version of its document, or appears in another
document, is never embedded twice, and vectors written while an ingestion was killed are found
when it resumes.

What a model cannot say is created next to the tables, by the migrations and by `fresh.py` in
the same words: on SQLite, the FTS5 table `kb_chunk_fts` over `heading` and `text`, kept by
triggers on insert and delete; on PostgreSQL, the chunk's stored `tsvector` (`tsv`) with a GIN
index, and, when the server has pgvector, the chunk's vector (`embedding`) with an HNSW index
(`knowledge_vectors.py`).
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from plait.store.models import METADATA, Id, _optional, _required

Json = JSON(none_as_null=True)

KB = Table(
    "kb",
    METADATA,
    _required("id", Id, primary_key=True),
    _required("name", String(120)),
    _required("description", Text, server_default=text("''")),
    _required("embedder", String(64)),
    _required("dimensions", Integer),
    _required("chunk_tokens", Integer),
    # Raised by every change of the searchable chunks: a search records the generation it saw.
    _required("generation", Integer, server_default=text("0")),
    _required("created_at", Double),
    _required("updated_at", Double),
    UniqueConstraint("name", name="uq_kb_name"),
)
"""A knowledge base: what embeds its chunks (`embedder`, `dimensions`) and how long they may be."""

KB_DOCUMENT = Table(
    "kb_document",
    METADATA,
    _required("id", Id, primary_key=True),
    _required("kb_id", Id, ForeignKey("kb.id", ondelete="CASCADE")),
    _required("name", String(255)),
    _required("version", Integer),
    _required("media_type", String(127)),
    _required("size", Integer),
    _required("content_hash", String(64)),
    _required("content", LargeBinary),
    _required("metadata_json", Json),
    # queued | ingesting | ready | failed | removed
    _required("status", String(16)),
    _optional("error", Text),
    _optional("run_id", Id),
    _required("chunks", Integer, server_default=text("0")),
    _required("created_at", Double),
    _required("updated_at", Double),
    UniqueConstraint("kb_id", "name", name="uq_kb_document_name"),
)
"""A document of a knowledge base, its newest content kept whole in the database (an ingestion
reads it from here, never from a path); `version` rises with each new content, and `run_id` is
the ingestion run that last worked on it."""

KB_CHUNK = Table(
    "kb_chunk",
    METADATA,
    _required("id", Integer, primary_key=True, autoincrement=True),
    _required("kb_id", Id, ForeignKey("kb.id", ondelete="CASCADE")),
    _required("document_id", Id, ForeignKey("kb_document.id", ondelete="CASCADE")),
    _required("document_version", Integer),
    _required("position", Integer),
    _required("heading_path_json", Json),
    _required("heading", Text),
    _required("text", Text),
    _required("tokens", Integer),
    _required("content_hash", String(64)),
    # live | removed: a chunk a new version no longer has is marked, never mixed with the new ones
    _required("status", String(16)),
    _required("added_generation", Integer),
    _optional("removed_generation", Integer),
    _required("created_at", Double),
    Index("idx_kb_chunk_document", "document_id", "status"),
    Index("idx_kb_chunk_kb", "kb_id", "status"),
    # what changed between two generations, without reading every chunk (exact dense search's
    # matrix follows a base's generations with these)
    Index("idx_kb_chunk_added", "kb_id", "added_generation"),
    Index("idx_kb_chunk_removed", "kb_id", "removed_generation"),
)
"""A piece of a document under the knowledge base's token bound, with the headings it sits under;
searchable from `added_generation` until `removed_generation`."""

KB_VECTOR = Table(
    "kb_vector",
    METADATA,
    _required("kb_id", Id, ForeignKey("kb.id", ondelete="CASCADE"), primary_key=True),
    _required("content_hash", String(64), primary_key=True),
    # float32, little-endian, the knowledge base's `dimensions` of them, unit length
    _required("vector", LargeBinary),
    _required("created_at", Double),
)
"""The embedding of a chunk's text, by content hash, in the knowledge base's embedder."""

MEMORY_FACT = Table(
    "memory_fact",
    METADATA,
    _required("id", Id, primary_key=True),
    # whose memory: `chat:<session id>`, or a name a deployer gives a shared memory
    _required("scope", String(200)),
    _required("subject", Text),
    _required("predicate", Text),
    _required("object", Text),
    _required("text", Text),
    _optional("valid_from", Double),
    # the subject's and object's names, normalised: what one hop of recall follows
    _required("entities_json", Json),
    # float32 unit vector of `text` in the embedder named, for recall (None: not embedded)
    _optional("vector", LargeBinary),
    _optional("embedder", String(64)),
    # active | superseded | retracted: a correction supersedes a fact, nothing deletes one
    _required("status", String(16)),
    _optional("supersedes", Id),
    _optional("superseded_by", Id),
    # where it came from: the messages, the run and node run that extracted it, or a person
    _required("source_json", Json),
    _required("created_by", String(120)),
    _optional("note", Text),
    _required("created_at", Double),
    _required("updated_at", Double),
    Index("idx_memory_fact_scope", "scope", "status"),
)
"""A fact remembered from a conversation (subject, predicate, object, and the sentence saying
it), with where it came from; a corrected fact is a new row that `supersedes` the old one."""
