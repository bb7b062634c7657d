"""Knowledge bases as a person uses them: create one, add documents (an ingestion run of the
system graph `plait.kb_ingest`), search it (a run of `plait.kb_search`, the same RETRIEVE a graph
uses), see its documents and how their ingestion stands, remove a document or the base.

Documents come in as bytes with a name; nothing here reads a path. Ingestion and search are
ordinary runs, so they are recorded, resumable after a crash, executable by workers, and
readable and correctable like any other run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from plait.errors import PlaitError, Refusal
from plait.knowledge.chunk import DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS
from plait.knowledge.embed import DEFAULT_EMBEDDER, EMBEDDERS
from plait.knowledge.parse import MAX_DOCUMENT_BYTES, ParseError, document_kind
from plait.model.enums import TERMINAL_RUN_STATUSES, RunStatus
from plait.runs.start import start_run
from plait.store import Store
from plait.store.knowledge import DocumentStatus, KbDocument, KnowledgeBase
from plait.store.knowledge_index import IndexChange

INGEST_GRAPH = "plait.kb_ingest"
SEARCH_GRAPH = "plait.kb_search"
MAX_DOCUMENTS_PER_RUN = 1000
"""Documents one ingestion run takes (the MAP's items); add more in several calls."""
MEDIA_TYPES = {
    "text": "text/plain",
    "markdown": "text/markdown",
    "html": "text/html",
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}


class KnowledgeError(PlaitError):
    kind = Refusal.INVALID
    code = "knowledge"


@dataclass(frozen=True, slots=True)
class DocumentUpload:
    """A document given to a knowledge base: its name (unique in the base), content and metadata
    (what RETRIEVE's `filters.metadata` matches)."""

    name: str
    content: bytes
    media_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Ingestion:
    """What adding documents did: the run ingesting the new and changed ones (None when every
    document was stored already with the same content), and each document."""

    knowledge_base: KnowledgeBase
    run_id: str | None
    queued: list[KbDocument]
    unchanged: list[KbDocument]


def create_base(
    store: Store,
    name: str,
    *,
    embedder: str = DEFAULT_EMBEDDER,
    chunk_tokens: int = DEFAULT_MAX_TOKENS,
    description: str = "",
) -> KnowledgeBase:
    """A new, empty knowledge base whose chunks `embedder` embeds, at most `chunk_tokens` long."""
    from plait.knowledge.embed import DIMENSIONS

    if embedder not in EMBEDDERS:
        raise KnowledgeError(f"unknown embedder '{embedder}'", f"use one of {', '.join(EMBEDDERS)}")
    if not MIN_MAX_TOKENS <= chunk_tokens <= MAX_MAX_TOKENS:
        raise KnowledgeError(
            f"chunk tokens must be from {MIN_MAX_TOKENS} to {MAX_MAX_TOKENS}, not {chunk_tokens}",
            f"the default, {DEFAULT_MAX_TOKENS}, leaves room for the headings within the embedder's 256",
        )
    return store.knowledge.create(
        name, embedder=embedder, dimensions=DIMENSIONS, chunk_tokens=chunk_tokens, description=description
    )


def add_documents(
    store: Store, base_ref: str, uploads: Sequence[DocumentUpload], *, announce: str | None = None
) -> Ingestion:
    """Store the documents and start one ingestion run for those that are new or changed
    (`announce`: hand it to workers). A document of a kind no parser reads, or over the size
    limit, is refused before anything is stored."""
    base = store.knowledge.get(base_ref)
    if not uploads:
        raise KnowledgeError("no documents given", "give at least one file")
    if len(uploads) > MAX_DOCUMENTS_PER_RUN:
        raise KnowledgeError(f"{len(uploads)} documents at once; one ingestion takes at most {MAX_DOCUMENTS_PER_RUN}",
                             "add them in several calls")  # fmt: skip
    if len({u.name for u in uploads}) != len(uploads):
        raise KnowledgeError("two documents have the same name", "a name is unique in a knowledge base")
    kinds = [_kind_of(upload) for upload in uploads]
    stored = [
        store.knowledge.put_document(base.id, u.name, u.content, u.media_type or MEDIA_TYPES[kind], u.metadata)
        for u, kind in zip(uploads, kinds, strict=True)
    ]
    queued = [document for document, changed in stored if changed]
    unchanged = [document for document, changed in stored if not changed]
    if not queued:
        return Ingestion(base, None, [], unchanged)
    items = [{"document_id": d.id, "name": d.name} for d in queued]
    run_id = start_run(store, INGEST_GRAPH, {"knowledge_base": base.name, "documents": items}, announce=announce)
    for document in queued:
        store.knowledge.set_status(document.id, document.version, DocumentStatus.QUEUED, run_id=run_id)
    return Ingestion(base, run_id, [store.knowledge.document(d.id) for d in queued], unchanged)


def _kind_of(upload: DocumentUpload) -> str:
    if not upload.name or len(upload.name) > 255 or "/" in upload.name or "\x00" in upload.name:
        raise KnowledgeError(
            f"'{upload.name[:80]}' is not a document name", "use a file name: no '/', at most 255 characters"
        )
    if len(upload.content) > MAX_DOCUMENT_BYTES:
        raise KnowledgeError(
            f"{upload.name} is {len(upload.content):,} bytes; a document holds at most {MAX_DOCUMENT_BYTES:,}",
            "split it into several documents",
        )
    try:
        return document_kind(upload.name, upload.media_type, upload.content)
    except ParseError as exc:
        raise KnowledgeError(exc.message, exc.hint) from None


def documents(store: Store, base_ref: str) -> list[KbDocument]:
    """The base's documents, each with how its ingestion stands: one still queued or ingesting
    whose run has ended (cancelled, or failed before the document's own node said why) is shown
    failed, with the run's reason."""
    base = store.knowledge.get(base_ref)
    shown = []
    for document in store.knowledge.documents(base.id):
        if document.status in (DocumentStatus.QUEUED, DocumentStatus.INGESTING) and document.run_id:
            run = store.runs.get(document.run_id)
            if run.status in TERMINAL_RUN_STATUSES:
                reason = f"its ingestion run {run.id} ended {run.status} without indexing it"
                document = replace(document, status=DocumentStatus.FAILED, error=reason)
        shown.append(document)
    return shown


def document_of(store: Store, base_ref: str, document_ref: str) -> KbDocument:
    """The base's document named `document_ref` (its name or id)."""
    base = store.knowledge.get(base_ref)
    found = next((d for d in store.knowledge.documents(base.id) if document_ref in (d.name, d.id)), None)
    if found is None:
        raise KnowledgeError(f"no document '{document_ref}' in knowledge base '{base.name}'",
                             "list the base's documents to see their names", kind=Refusal.NOT_FOUND,
                             code="not_found")  # fmt: skip
    return found


def remove_document(store: Store, base_ref: str, document_ref: str) -> IndexChange:
    """Stop searching a document (by name or id): it and its chunks are marked removed, kept for
    the searches of earlier generations."""
    found = document_of(store, base_ref, document_ref)
    return store.knowledge_index.remove_document(found.id)


def search_input(base_ref: str, query: str, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run input of a search (`plait.kb_search`): settings are RETRIEVE's (mode, top_k,
    min_score, filters, expand), checked by the node itself."""
    if not query.strip():
        raise KnowledgeError("the search query is empty", "give the text to search for")
    return {"knowledge_base": base_ref, "query": query, "settings": settings or {}}


def start_search(store: Store, base_ref: str, query: str, settings: dict[str, Any] | None = None) -> str:
    """Start the run of one search; the caller drives it (a search is a short run)."""
    base = store.knowledge.get(base_ref)
    return start_run(store, SEARCH_GRAPH, search_input(base.name, query, settings), files=False)


def search_result(store: Store, run_id: str) -> dict[str, Any]:
    """The hits of a search run that has ended; when it failed, its RETRIEVE's refusal (an unknown
    knowledge base is NOT_FOUND, bad settings INVALID), with the node's details and hint."""
    run = store.runs.get(run_id)
    if run.status == RunStatus.COMPLETED and isinstance(run.output, dict):
        return dict(run.output)
    error: dict[str, Any] = next((n.error for n in store.runs.node_runs(run_id) if n.error), {})
    raise KnowledgeError(
        str(error.get("message") or f"the search run {run_id} ended {run.status}"),
        error.get("hint") if isinstance(error.get("hint"), str) else None,
        [str(d) for d in error.get("details") or ()],
        kind=Refusal.NOT_FOUND if error.get("kind") == "not_found" else Refusal.INVALID,
    )


def backend(url: str) -> dict[str, Any]:
    """How knowledge bases search in the store at `url` (on PostgreSQL, whether pgvector's index
    serves dense search: one connection asks), and whether their embedder can run here (what
    `plait config check` says; the store is not opened)."""
    from plait.engine.retrieval import MAX_EXACT_CHUNKS
    from plait.knowledge.embed import available, missing

    sqlite = url.startswith("sqlite")
    keyword = (
        "SQLite FTS5 (BM25, Porter stemmer)" if sqlite else "PostgreSQL's stored tsvector with a GIN index (ts_rank_cd)"
    )
    exact = f"exact, numpy, at most {MAX_EXACT_CHUNKS:,} chunks a base"
    dense, vector_index = exact, None
    if not sqlite:
        from plait.store.knowledge_vectors import in_database

        found, why_not = in_database(url)
        if found is None:
            dense = f"{exact} (no pgvector index: {why_not})"
        else:
            dense, vector_index = f"by {found.describe()}; other bases {exact}", found.describe()
    lacking = [] if available(DEFAULT_EMBEDDER) else missing(DEFAULT_EMBEDDER)
    return {"keyword": keyword, "dense": dense, "vector_index": vector_index, "embedder": DEFAULT_EMBEDDER,
            "embedder_missing": lacking}  # fmt: skip
