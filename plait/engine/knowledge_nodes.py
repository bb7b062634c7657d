"""The executors of PARSE, CHUNK, INDEX and RETRIEVE.

The work is blocking (reading documents, a tokenizer, an embedding model, the store), so each runs
in a thread. INDEX is the one node that writes outside its own result, and it is written so that
running it again changes nothing: vectors are kept by content hash as they are made (an INDEX
killed while embedding embeds only the rest when it runs again), and the chunk set of a document
version is replaced in one transaction that keeps the chunks it has already.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from plait.engine.render import build_view, js_scope
from plait.engine.results import Timer, node_snapshot
from plait.engine.retrieval import Search, search
from plait.engine.runtime import KnowledgeStore, NodeResult, Runtime
from plait.engine.state import RunState
from plait.errors import PlaitError, Refusal
from plait.failpoints import failpoint
from plait.model.knowledge_nodes import ChunkNode, IndexNode, ParseNode, RetrieveNode, RetrieveSettings
from plait.model.nodes import NodeBase
from plait.store.knowledge import DocumentStatus

EMBED_BATCH = 64
"""Texts embedded, then kept, at a time: what a kill can make INDEX embed again at most."""


async def run_parse(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """PARSE: the document's sections under their headings (the document is read from the store)."""
    assert isinstance(node, ParseNode)
    timer, scope = Timer(), js_scope(state, node)
    document_id = (await build_view(state, node).arender(node.document)).strip()
    snapshot = node_snapshot(node, state, scope, document_id=document_id)
    try:
        knowledge = _knowledge(rt)
        output = await asyncio.to_thread(_parse, knowledge, document_id)
    except PlaitError as exc:
        return _refused(snapshot, timer, exc)
    snapshot |= {"version": output["version"], "content_hash": output.pop("content_hash")}
    return NodeResult.completed(output, snapshot, [timer.attempt(result=_summary(output, "sections"))])


def _parse(knowledge: KnowledgeStore, document_id: str) -> dict[str, Any]:
    from plait.knowledge.parse import parse_document

    document, content = knowledge.bases.content(document_id)
    base = knowledge.bases.get(document.kb_id)
    knowledge.bases.set_status(document.id, document.version, DocumentStatus.INGESTING)
    try:
        parsed = parse_document(content, name=document.name, media_type=document.media_type)
    except PlaitError as exc:
        knowledge.bases.set_status(document.id, document.version, DocumentStatus.FAILED, error=exc.message)
        raise
    return {
        "knowledge_base": base.name,
        "document_id": document.id,
        "name": document.name,
        "version": document.version,
        "content_hash": document.content_hash,
        "kind": parsed.kind,
        "title": parsed.title,
        "sections": [{"heading_path": list(s.heading_path), "text": s.text} for s in parsed.sections],
    }


async def run_chunk(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """CHUNK: the sections of `current` (a PARSE output) as chunks under the token bound."""
    assert isinstance(node, ChunkNode)
    timer, scope = Timer(), js_scope(state, node)
    current = state.current_for(node.id)
    snapshot = node_snapshot(node, state, scope)
    try:
        parsed = _document_value(node, current, "sections")
        output = await asyncio.to_thread(_chunk, _knowledge(rt), parsed, node.max_tokens)
    except PlaitError as exc:
        return _refused(snapshot, timer, exc)
    return NodeResult.completed(output, snapshot, [timer.attempt(result=_summary(output, "chunks"))])


def _chunk(knowledge: KnowledgeStore, parsed: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
    try:
        return _chunked(knowledge, parsed, max_tokens)
    except PlaitError as exc:
        _failed(knowledge, parsed, exc)
        raise


def _failed(knowledge: KnowledgeStore, value: dict[str, Any], exc: PlaitError) -> None:
    """Say on the document that this version's ingestion failed, and why."""
    version = value["version"]
    if isinstance(version, int):
        knowledge.bases.set_status(str(value["document_id"]), version, DocumentStatus.FAILED, error=exc.message)


def _chunked(knowledge: KnowledgeStore, parsed: dict[str, Any], max_tokens: int | None) -> dict[str, Any]:
    from plait.knowledge.chunk import chunk_sections
    from plait.knowledge.parse import Section

    bound = max_tokens or knowledge.bases.get(parsed["knowledge_base"]).chunk_tokens
    sections = [Section(tuple(s.get("heading_path") or ()), str(s.get("text") or "")) for s in parsed["sections"]]
    chunks = chunk_sections(sections, max_tokens=bound)
    return {
        **{key: parsed[key] for key in ("knowledge_base", "document_id", "name", "version")},
        "max_tokens": bound,
        "chunks": [
            {
                "position": c.position,
                "heading_path": list(c.heading_path),
                "text": c.text,
                "tokens": c.tokens,
                "content_hash": c.content_hash,
            }
            for c in chunks
        ],
    }


async def run_index(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """INDEX: the chunks of `current` (a CHUNK output) become the document's searchable chunks."""
    assert isinstance(node, IndexNode)
    timer, scope = Timer(), js_scope(state, node)
    snapshot = node_snapshot(node, state, scope)
    try:
        chunked = _document_value(node, state.current_for(node.id), "chunks")
        output = await asyncio.to_thread(_index, _knowledge(rt), chunked, node.id)
    except PlaitError as exc:
        return _refused(snapshot, timer, exc)
    return NodeResult.completed(output, snapshot, [timer.attempt(result=output)])


def _index(knowledge: KnowledgeStore, chunked: dict[str, Any], node_id: str) -> dict[str, Any]:
    try:
        return _embed_and_store(knowledge, chunked, node_id)
    except PlaitError as exc:
        _failed(knowledge, chunked, exc)
        raise


def _embed_and_store(knowledge: KnowledgeStore, chunked: dict[str, Any], node_id: str) -> dict[str, Any]:
    """Embed what the base has no vector for, `EMBED_BATCH` at a time, keeping each batch as it
    is made; then replace the document's chunks in one transaction."""
    from plait.knowledge.chunk import Chunk, content_hash, embedding_text
    from plait.knowledge.embed import embedder

    base = knowledge.bases.get(chunked["knowledge_base"])
    chunks = []
    for position, item in enumerate(chunked["chunks"]):
        heading, body = tuple(str(h) for h in item.get("heading_path") or ()), str(item.get("text") or "")
        # the hash is computed again: a person may have corrected a chunk's text
        chunks.append(Chunk(position, heading, body, int(item.get("tokens") or 0), content_hash(heading, body)))
    missing = knowledge.index.missing_vectors(base.id, [c.content_hash for c in chunks])
    todo = list({c.content_hash: c for c in chunks if c.content_hash in missing}.values())
    model = embedder(base.embedder)
    for start in range(0, len(todo), EMBED_BATCH):
        batch = todo[start : start + EMBED_BATCH]
        texts = [embedding_text(c) for c in batch]
        vectors = model.embed(texts).astype("<f4")
        knowledge.index.put_vectors(base.id, {c.content_hash: vectors[i].tobytes() for i, c in enumerate(batch)})
        failpoint("embedded", node_id)  # a kill between batches: the durability tests' point
    change = knowledge.index.replace_chunks(chunked["document_id"], int(chunked["version"]), chunks)
    return {
        **{key: chunked[key] for key in ("knowledge_base", "document_id", "name", "version")},
        "chunks": len(chunks),
        "embedded": len(todo),
        "added": change.added,
        "kept": change.kept,
        "removed": change.removed,
        "generation": change.generation,
    }


async def run_retrieve(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """RETRIEVE: the hits of the query in the knowledge base, at the generation it has now."""
    assert isinstance(node, RetrieveNode)
    timer, scope, view = Timer(), js_scope(state, node), build_view(state, node)
    query = (await view.arender(node.query)).strip()
    name = (await view.arender(node.knowledge_base)).strip()
    snapshot = node_snapshot(node, state, scope, query=query, knowledge_base=name)
    try:
        ask = _search_of(node, query, state.input)
        snapshot["search"] = ask.recorded()
        output = await asyncio.to_thread(_retrieve, _knowledge(rt), name, ask)
    except PlaitError as exc:
        return _refused(snapshot, timer, exc)
    snapshot["generation"] = output["generation"]
    return NodeResult.completed(output, snapshot, [timer.attempt(result=_summary(output, "hits"))])


def _search_of(node: RetrieveNode, query: str, run_input: Any) -> Search:
    """The node's search, with the settings the run input gives at `settings_from` over its own."""
    settings = RetrieveSettings()
    if node.settings_from is not None:
        value: Any = run_input
        for key in node.settings_from.split(".")[1:]:
            value = value.get(key) if isinstance(value, dict) else None
        try:
            settings = RetrieveSettings.model_validate(value or {})
        except ValidationError as exc:
            problems = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
            raise PlaitError(
                f"RETRIEVE node '{node.id}': the search settings at {node.settings_from} are not valid",
                "give mode (keyword, dense, hybrid), top_k (1-50), min_score, filters or expand",
                problems,
                kind=Refusal.INVALID,
            ) from None
    return Search(
        query,
        settings.mode or node.mode,
        settings.top_k or node.top_k,
        settings.min_score if settings.min_score is not None else node.min_score,
        settings.filters or node.filters,
        settings.expand or node.expand,
    )


def _retrieve(knowledge: KnowledgeStore, name: str, ask: Search) -> dict[str, Any]:
    base = knowledge.bases.get(name)
    hits = search(knowledge.bases, knowledge.index, base, ask) if ask.query else []
    return {
        "query": ask.query,
        "knowledge_base": base.name,
        "generation": base.generation,
        "mode": str(ask.mode),
        "hits": [hit.as_output() for hit in hits],
    }


def _knowledge(rt: Runtime) -> KnowledgeStore:
    if rt.knowledge is None:
        raise PlaitError(
            "knowledge bases are not available here: this engine has no store",
            "run the graph with a store (`plait run`, `plait serve`, a worker)",
        )
    return rt.knowledge


def _document_value(node: NodeBase, current: Any, key: str) -> dict[str, Any]:
    """`current` as the document value the node reads, or a refusal naming what is missing."""
    wanted = ("knowledge_base", "document_id", "name", "version", key)
    if not isinstance(current, dict) or any(k not in current for k in wanted) or not isinstance(current[key], list):
        raise PlaitError(
            f"{node.type} node '{node.id}' reads a document value ({', '.join(wanted)}) from the node before it",
            f"put it after a {'PARSE' if key == 'sections' else 'CHUNK'} node",
            kind=Refusal.INVALID,
        )
    return current


def _refused(snapshot: dict[str, Any], timer: Timer, exc: PlaitError) -> NodeResult:
    kind = "not_found" if exc.kind == Refusal.NOT_FOUND else "input"
    return NodeResult.failed(
        snapshot, [timer.attempt(error=exc.message)], kind=kind, message=exc.message, details=exc.details,
        hint=exc.hint,
    )  # fmt: skip


def _summary(output: dict[str, Any], key: str) -> dict[str, Any]:
    """The attempt's record of an output: its list counted, not copied a second time."""
    return {k: (len(v) if k == key else v) for k, v in output.items()}
