"""/api/kb: knowledge bases, their documents and chunks, and search.

Adding documents is a multipart upload answered at once with the ingestion run's id (the run
executes here or on workers; watch it as any run). A search is a run of the system graph
`plait.kb_search`, answered when it ends: the hits are exactly what a RETRIEVE node with the
same settings gives a graph, and the run keeps the record of it.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, File, Form, Response, UploadFile
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field, StrictFloat

from plait.api.errors import ApiError
from plait.api.schemas import CheckedIn
from plait.api.state import ServerState, get_state
from plait.knowledge.chunk import DEFAULT_MAX_TOKENS
from plait.knowledge.embed import DEFAULT_EMBEDDER
from plait.model.knowledge_nodes import MAX_TOP_K, RetrieveFilters, RetrieveMode
from plait.runs import knowledge
from plait.store.knowledge import DocumentStatus, KbDocument, KnowledgeBase

router = APIRouter(prefix="/kb", tags=["knowledge"])
State = Annotated[ServerState, Depends(get_state)]


class KnowledgeBaseIn(CheckedIn):
    name: str = Field(min_length=1, max_length=120, description="Lower-case letters, digits, '_', '.', '-'.")
    embedder: str = DEFAULT_EMBEDDER
    chunk_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=16, le=512)
    description: str = Field("", max_length=2000)


class KnowledgeBaseOut(BaseModel):
    id: str
    name: str
    description: str
    embedder: str
    dimensions: int
    chunk_tokens: int
    generation: int
    document_count: int = Field(description="Its documents that are not removed.")
    created_at: float
    updated_at: float


class DocumentOut(BaseModel):
    id: str
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
    updated_at: float


class KnowledgeBaseDetailOut(KnowledgeBaseOut):
    documents: list[DocumentOut]


class IngestionOut(BaseModel):
    run_id: str | None = Field(description="The ingestion run (None: every document was stored already, unchanged).")
    run: str | None
    documents: list[DocumentOut]
    unchanged: list[DocumentOut]


class RemovedOut(BaseModel):
    removed: int
    generation: int


class ChunkOut(BaseModel):
    id: int
    position: int
    heading_path: list[str]
    text: str
    tokens: int
    content_hash: str
    live: bool
    added_generation: int
    removed_generation: int | None


class SearchIn(CheckedIn):
    query: str = Field(min_length=1, max_length=4000)
    mode: RetrieveMode | None = None
    top_k: int | None = Field(None, ge=1, le=MAX_TOP_K)
    min_score: StrictFloat | None = None
    filters: RetrieveFilters | None = None
    expand: Literal["chunk", "section"] | None = None


class HitOut(BaseModel):
    chunk_id: int
    document: str
    document_id: str
    heading_path: list[str]
    position: int
    text: str
    score: float
    ranks: dict[str, int | None]


class SearchOut(BaseModel):
    run_id: str
    query: str
    knowledge_base: str
    generation: int
    mode: str
    hits: list[HitOut]


@router.get("", response_model=list[KnowledgeBaseOut])
def list_bases(state: State) -> list[KnowledgeBaseOut]:
    """Every knowledge base."""
    counts = state.store.knowledge.document_counts()
    return [_base(b, counts.get(b.id, 0)) for b in state.store.knowledge.bases()]


@router.post("", response_model=KnowledgeBaseOut, status_code=201)
def create(state: State, body: KnowledgeBaseIn) -> KnowledgeBaseOut:
    """A new, empty knowledge base (409 when the name is taken)."""
    made = knowledge.create_base(
        state.store, body.name, embedder=body.embedder, chunk_tokens=body.chunk_tokens, description=body.description
    )
    return _base(made, 0)


@router.get("/{kb}", response_model=KnowledgeBaseDetailOut)
def get_base(state: State, kb: str) -> KnowledgeBaseDetailOut:
    """A knowledge base with its documents and how their ingestion stands."""
    base = state.store.knowledge.get(kb)
    shown = knowledge.documents(state.store, base.id)
    kept = sum(1 for d in shown if d.status != DocumentStatus.REMOVED)
    return KnowledgeBaseDetailOut(**_base(base, kept).model_dump(), documents=[_document(d) for d in shown])


@router.delete("/{kb}", status_code=204)
def delete_base(state: State, kb: str) -> Response:
    """Delete a knowledge base with its documents, chunks and vectors."""
    base = state.store.knowledge.get(kb)
    state.store.knowledge.delete(base.id)
    return Response(status_code=204)


@router.post("/{kb}/documents", response_model=IngestionOut, status_code=202)
async def add_documents(
    state: State,
    kb: str,
    files: Annotated[list[UploadFile], File(min_length=1, description="Text, Markdown, HTML, PDF or DOCX files.")],
    metadata: Annotated[str | None, Form(description="A JSON object: metadata of every file sent.")] = None,
) -> IngestionOut:
    """Store the files and start their ingestion run (only new and changed files are ingested).
    Answered at once: follow the run at /api/runs/{run_id}."""
    meta = _metadata(metadata)
    uploads = [
        knowledge.DocumentUpload(f.filename or "document", await f.read(), _media_type(f.content_type), meta)
        for f in files
    ]
    handoff = state.executor.handoff
    announce = "start" if handoff is not None else None
    ingestion = await run_in_threadpool(knowledge.add_documents, state.store, kb, uploads, announce=announce)
    if ingestion.run_id is not None:
        state.executor.launch(ingestion.run_id, fresh=True)
    run = f"/api/runs/{ingestion.run_id}" if ingestion.run_id else None
    return IngestionOut(run_id=ingestion.run_id, run=run, documents=[_document(d) for d in ingestion.queued],
                        unchanged=[_document(d) for d in ingestion.unchanged])  # fmt: skip


@router.get("/{kb}/documents", response_model=list[DocumentOut])
def list_documents(state: State, kb: str) -> list[DocumentOut]:
    """The base's documents and how their ingestion stands."""
    return [_document(d) for d in knowledge.documents(state.store, kb)]


@router.delete("/{kb}/documents/{document}", response_model=RemovedOut)
def remove_document(state: State, kb: str, document: str) -> RemovedOut:
    """Stop searching a document (by name or id); its chunks are kept for earlier generations."""
    change = knowledge.remove_document(state.store, kb, document)
    return RemovedOut(removed=change.removed, generation=change.generation)


@router.get("/{kb}/documents/{document}/chunks", response_model=list[ChunkOut])
def chunks(state: State, kb: str, document: str, removed: bool = False) -> list[ChunkOut]:
    """A document's chunks in order (`removed`: with those earlier versions had)."""
    found = knowledge.document_of(state.store, kb, document)
    shown = state.store.knowledge_index.document_chunks(found.id, live_only=not removed)
    return [ChunkOut(**{k: getattr(c, k) for k in ChunkOut.model_fields if k != "heading_path"},
                     heading_path=list(c.heading_path)) for c in shown]  # fmt: skip


@router.post("/{kb}/search", response_model=SearchOut)
async def search(state: State, kb: str, body: SearchIn) -> SearchOut:
    """Search, as a RETRIEVE node with these settings would: a run of `plait.kb_search`."""
    settings = body.model_dump(exclude={"query"}, exclude_none=True, mode="json")
    run_id = await run_in_threadpool(knowledge.start_search, state.store, kb, body.query, settings)
    state.executor.launch(run_id, fresh=True)
    await state.executor.settled(run_id)
    found = await run_in_threadpool(knowledge.search_result, state.store, run_id)
    return SearchOut(run_id=run_id, **found)


def _metadata(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ApiError(422, "invalid_metadata", "metadata must be a JSON object", hint='e.g. {"team": "support"}')
    return value


def _media_type(value: str | None) -> str | None:
    kind = (value or "").split(";", 1)[0].strip()[:127]
    return None if kind in ("", "application/octet-stream") else kind


def _base(b: KnowledgeBase, documents: int) -> KnowledgeBaseOut:
    return KnowledgeBaseOut(id=b.id, name=b.name, description=b.description, embedder=b.embedder,
                            document_count=documents, dimensions=b.dimensions, chunk_tokens=b.chunk_tokens,
                            generation=b.generation, created_at=b.created_at, updated_at=b.updated_at)  # fmt: skip


def _document(d: KbDocument) -> DocumentOut:
    return DocumentOut(id=d.id, name=d.name, version=d.version, media_type=d.media_type, size=d.size,
                       content_hash=d.content_hash, metadata=d.metadata, status=d.status, error=d.error,
                       run_id=d.run_id, chunks=d.chunks, updated_at=d.updated_at)  # fmt: skip
