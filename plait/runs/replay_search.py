"""`plait replay` of a RETRIEVE node run: the recorded search again, at the generation it saw.

A RETRIEVE's input snapshot keeps its query, its settings and the knowledge base's generation,
and chunks are only ever marked with the generations they were searchable between, so the same
search at that generation gives the same hits. When it does not, each difference is explained:
a document deleted since (its chunks went with it), a document whose metadata no longer passes
the recorded filter. The same search at the base's generation now is given beside it, with the
documents changed in between, so a person sees why a run would get other hits today. Nothing is
stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plait.engine.retrieval import Search, search
from plait.errors import PlaitError, Refusal
from plait.model.knowledge_nodes import RetrieveFilters, RetrieveMode
from plait.store import NodeRunRecord, Store
from plait.store.knowledge import KnowledgeBase


class SearchReplayError(PlaitError):
    """The node run is no recorded search, or what it searched is gone."""

    kind = Refusal.INVALID
    code = "replay_refused"


@dataclass(frozen=True, slots=True)
class SearchReplay:
    """The recorded hits, the hits of the same search at the recorded generation and now."""

    node_run_id: str
    knowledge_base: str
    query: str
    generation: int
    current_generation: int
    stored: list[int]
    replayed: list[int]
    now: list[int]
    same: bool
    explanations: list[str] = field(default_factory=list)
    changed_since: list[str] = field(default_factory=list)
    """Documents added, changed or removed after the recorded generation (by name)."""
    hits: list[dict[str, Any]] = field(default_factory=list)
    """The replayed hits, as the node outputs them."""

    def as_json(self) -> dict[str, Any]:
        return {"kind": "search", **{name: getattr(self, name) for name in self.__slots__}}


def is_search(record: NodeRunRecord) -> bool:
    return (record.input_snapshot or {}).get("node_type") == "RETRIEVE"


def replay_search(store: Store, record: NodeRunRecord) -> SearchReplay:
    """The node run's search again at its recorded generation, compared with what it returned."""
    snapshot = record.input_snapshot or {}
    if not is_search(record) or "generation" not in snapshot or not isinstance(snapshot.get("search"), dict):
        raise SearchReplayError(
            f"node run {record.id} ({record.node_id}) is not a completed search: nothing to replay",
            "replay a RETRIEVE node run that completed (`plait runs show RUN_ID` lists them)",
        )
    name = str(snapshot.get("knowledge_base") or "")
    try:
        base = store.knowledge.get(name)
    except PlaitError:
        raise SearchReplayError(
            f"node run {record.id} searched the knowledge base '{name}', which no longer exists",
            "a deleted knowledge base cannot be searched again; its recorded hits are in the node run's output",
        ) from None
    recorded = snapshot["search"]
    ask = Search(
        str(snapshot.get("query") or ""),
        RetrieveMode(recorded["mode"]),
        int(recorded["top_k"]),
        recorded.get("min_score"),
        RetrieveFilters.model_validate(recorded.get("filters") or {}),
        str(recorded.get("expand") or "chunk"),
    )
    generation = int(snapshot["generation"])
    replayed = search(store.knowledge, store.knowledge_index, base, ask, as_of=generation) if ask.query else []
    now = search(store.knowledge, store.knowledge_index, base, ask) if ask.query else []
    stored = [int(hit["chunk_id"]) for hit in (record.output or {}).get("hits", ())]
    again = [hit.chunk.id for hit in replayed]
    return SearchReplay(
        node_run_id=record.id,
        knowledge_base=base.name,
        query=ask.query,
        generation=generation,
        current_generation=base.generation,
        stored=stored,
        replayed=again,
        now=[hit.chunk.id for hit in now],
        same=stored == again,
        explanations=_explained(store, base, ask, stored, again),
        changed_since=_changed_since(store, base, generation),
        hits=[hit.as_output() for hit in replayed],
    )


def _explained(store: Store, base: KnowledgeBase, ask: Search, stored: list[int], again: list[int]) -> list[str]:
    """Why each recorded hit did not come back, or came back at another place."""
    if stored == again:
        return []
    held = store.knowledge_index.chunks(stored)
    documents = {d.id: d for d in store.knowledge.documents(base.id)}
    reasons = []
    for place, chunk_id in enumerate(stored, 1):
        if chunk_id in again:
            if again.index(chunk_id) + 1 != place:
                reasons.append(f"chunk {chunk_id} came back at place {again.index(chunk_id) + 1}, not {place}")
            continue
        chunk = held.get(chunk_id)
        if chunk is None or chunk.document_id not in documents:
            reasons.append(f"chunk {chunk_id} is gone: its document was deleted after the search")
            continue
        document = documents[chunk.document_id]
        wanted = ask.filters.metadata
        if any(document.metadata.get(key) != value for key, value in wanted.items()):
            reasons.append(
                f"chunk {chunk_id}: the metadata of '{document.name}' changed and no longer matches the filter"
            )
        else:
            reasons.append(f"chunk {chunk_id} of '{document.name}' did not come back (the ranking changed)")
    reasons += [f"chunk {chunk_id} is new among the hits" for chunk_id in again if chunk_id not in stored]
    return reasons


def _changed_since(store: Store, base: KnowledgeBase, generation: int) -> list[str]:
    """The documents whose chunks were added or removed after `generation`, by name."""
    if generation == base.generation:
        return []
    documents = {d.id: d.name for d in store.knowledge.documents(base.id)}
    changed = store.knowledge_index.documents_changed_since(base.id, generation)
    return sorted(documents.get(document_id, f"a deleted document ({document_id})") for document_id in changed)
