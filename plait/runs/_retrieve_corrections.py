"""What a person may write as a RETRIEVE node's corrected output: its hits, each naming a chunk of
the knowledge base the node searched. A hit dropped is simply left out; a hit added may give only
its `chunk_id`, and the rest (document, headings, text) comes from the store, for every hit, so
what the downstream reads is the chunk's real text and never a made-up one. An id the base does not hold
refuses the correction, naming it."""

from __future__ import annotations

from typing import Any

from plait.errors import Refusal
from plait.runs._correction_run import CorrectionError
from plait.store import NotFoundError, Store

HINT = "each hit names a chunk of the knowledge base by chunk_id (`plait kb search` shows them)"


def checked_hits(store: Store, node_id: str, value: Any, before: Any) -> Any:
    """`value` with each hit checked against the knowledge base and completed from it."""
    if not isinstance(value, dict) or not isinstance(value.get("hits"), list):
        raise CorrectionError(
            f"the value for RETRIEVE node '{node_id}' needs a list `hits`", HINT, kind=Refusal.INVALID
        )
    name = value.get("knowledge_base") or (before or {}).get("knowledge_base")
    try:
        base = store.knowledge.get(str(name))
    except NotFoundError:
        raise CorrectionError(f"node '{node_id}' searched knowledge base '{name}', which is gone", HINT) from None
    given = [hit.get("chunk_id") if isinstance(hit, dict) else None for hit in value["hits"]]
    wanted = [i for i in given if isinstance(i, int) and not isinstance(i, bool)]
    if len(wanted) != len(given):
        raise CorrectionError(
            f"every hit of node '{node_id}' needs a whole-number chunk_id", HINT, kind=Refusal.INVALID
        )
    held = store.knowledge_index.chunks(wanted)
    unknown = [i for i in wanted if i not in held or held[i].kb_id != base.id]
    if unknown:
        raise CorrectionError(
            f"knowledge base '{base.name}' has no chunk {', '.join(map(str, unknown))}",
            HINT,
            kind=Refusal.NOT_FOUND,
        )
    names = {d.id: d.name for d in store.knowledge.documents(base.id)}
    hits = []
    for hit in value["hits"]:
        chunk = held[hit["chunk_id"]]
        from_store = {
            "document": names.get(chunk.document_id, ""),
            "document_id": chunk.document_id,
            "heading_path": list(chunk.heading_path),
            "position": chunk.position,
            "text": chunk.text,
        }
        hits.append({"score": 0.0, "ranks": {}, **hit, **from_store})
    return {**(before if isinstance(before, dict) else {}), **value, "knowledge_base": base.name, "hits": hits}
