"""`client.kb` and `client.memory`: what `plait kb` and `plait memory` do, from Python, over the
client's store.

Adding documents executes their ingestion run on the client's loop, and a search is a run of the
same RETRIEVE a graph uses, like `plait kb add` and `plait kb search` (docs/knowledge.md).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from plait.client._namespaces import _Blocking
from plait.client._sync import _blocking

if TYPE_CHECKING:
    from plait.client._async import AsyncClient
    from plait.runs.knowledge import DocumentUpload
    from plait.store.knowledge import KbDocument, KnowledgeBase
    from plait.store.knowledge_index import IndexChange
    from plait.store.memory import Fact


class AsyncKnowledge:
    """Knowledge bases: create, add documents, search, list, remove."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def create(
        self, name: str, *, embedder: str | None = None, chunk_tokens: int | None = None, description: str = ""
    ) -> KnowledgeBase:
        """A new, empty knowledge base."""
        from plait.runs.knowledge import create_base

        options: dict[str, Any] = {"description": description}
        options |= {k: v for k, v in (("embedder", embedder), ("chunk_tokens", chunk_tokens)) if v is not None}
        return self._client._refused(create_base, self._client.store, name, **options)

    async def add(
        self, kb: str, documents: Mapping[str, bytes | str] | Sequence[DocumentUpload],
        metadata: dict[str, Any] | None = None,
    ) -> builtins.list[KbDocument]:  # fmt: skip
        """Add or update documents (name -> content, or `DocumentUpload`s) and ingest the new and
        changed ones; each given document, with how its ingestion ended."""
        from plait.runs.knowledge import DocumentUpload, add_documents
        from plait.runs.knowledge import documents as listed

        if isinstance(documents, Mapping):
            meta = dict(metadata or {})
            uploads = [DocumentUpload(name, body.encode() if isinstance(body, str) else body, None, meta)
                       for name, body in documents.items()]  # fmt: skip
        else:
            uploads = list(documents)
        store = self._client.store
        ingestion = self._client._refused(add_documents, store, kb, uploads)
        if ingestion.run_id is not None:
            await self._client._drive(ingestion.run_id)
        given = {u.name for u in uploads}
        return [d for d in self._client._refused(listed, store, kb) if d.name in given]

    async def search(
        self, kb: str, query: str, *, mode: str | None = None, top_k: int | None = None,
        min_score: float | None = None, filters: dict[str, Any] | None = None, expand: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """The hits of `query`, as a RETRIEVE node with these settings would give (docs/graph-format.md,
        RETRIEVE); the output's `run_id` is the search's run."""
        from plait.runs.knowledge import search_result, start_search

        given = {"mode": mode, "top_k": top_k, "min_score": min_score, "filters": filters, "expand": expand}
        settings = {key: value for key, value in given.items() if value is not None}
        store = self._client.store
        run_id = self._client._refused(start_search, store, kb, query, settings)
        await self._client._drive(run_id)
        return {"run_id": run_id, **self._client._refused(search_result, store, run_id)}

    async def list(self) -> builtins.list[KnowledgeBase]:
        """Every knowledge base, by name."""
        return self._client._refused(self._client.store.knowledge.bases)

    async def documents(self, kb: str) -> builtins.list[KbDocument]:
        """A base's documents, with how their ingestion stands."""
        from plait.runs.knowledge import documents

        return self._client._refused(documents, self._client.store, kb)

    async def remove(self, kb: str, document: str) -> IndexChange:
        """Stop searching a document (by name or id)."""
        from plait.runs.knowledge import remove_document

        return self._client._refused(remove_document, self._client.store, kb, document)

    async def delete(self, kb: str) -> bool:
        """Delete a knowledge base with its documents, chunks and vectors."""
        store = self._client.store
        base = self._client._refused(store.knowledge.get, kb)
        return store.knowledge.delete(base.id)


class Knowledge(_Blocking[AsyncKnowledge]):
    """`Client.kb`: the methods of `AsyncKnowledge`, each returning its result."""

    create = _blocking(AsyncKnowledge.create)
    add = _blocking(AsyncKnowledge.add)
    search = _blocking(AsyncKnowledge.search)
    list = _blocking(AsyncKnowledge.list)
    documents = _blocking(AsyncKnowledge.documents)
    remove = _blocking(AsyncKnowledge.remove)
    delete = _blocking(AsyncKnowledge.delete)


class AsyncMemory:
    """A chat's remembered facts: show, correct, retract (docs/knowledge.md, "Memory")."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def facts(self, scope: str, *, history: bool = False) -> builtins.list[Fact]:
        """A memory's active facts (`history`: the superseded and retracted ones too)."""
        return self._client._refused(self._client.store.memory.facts, scope, history=history)

    async def scopes(self) -> builtins.list[tuple[str, int]]:
        """Every memory with facts, and how many are active."""
        return self._client._refused(self._client.store.memory.scopes)

    async def correct(self, fact_id: str, changes: dict[str, Any], *, note: str | None = None) -> Fact:
        """Store a corrected fact in place of `fact_id` (changes: subject, predicate, object, text)."""
        from plait.runs.memory import correct

        return self._client._refused(correct, self._client.store, fact_id, changes, by="python", note=note)

    async def retract(self, fact_id: str, *, note: str | None = None) -> Fact:
        """Mark a fact wrong, with nothing in its place."""
        from plait.runs.memory import retract

        return self._client._refused(retract, self._client.store, fact_id, by="python", note=note)


class Memory(_Blocking[AsyncMemory]):
    """`Client.memory`: the methods of `AsyncMemory`, each returning its result."""

    facts = _blocking(AsyncMemory.facts)
    scopes = _blocking(AsyncMemory.scopes)
    correct = _blocking(AsyncMemory.correct)
    retract = _blocking(AsyncMemory.retract)
