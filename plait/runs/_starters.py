"""Designing a new graph without a capable model: the nearest starter graph, filled from the request.

The embedded model (a few hundred million parameters) can follow a JSON Schema, but rarely
designs a useful graph from a description. With only that model, a request for a new graph
is answered by retrieval instead: the starter graphs shipped in `plait/chat_starters/` (each a
small, valid pattern: summarise, classify and route, extract, translate, draft and review, each
item of a list, analyse then write) are ranked by the embedding similarity of their
descriptions to the request (MiniLM, `plait.llm.embedding`; shared words when it is not
installed), and the nearest becomes the draft, as operations, named after the conversation and
told the request in its prompts. The reply says so, and that a configured provider designs from
the description itself.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

STARTERS_DIR = Path(__file__).resolve().parent.parent / "chat_starters"
_WORDS = re.compile(r"[a-z]{3,}")


@dataclass(frozen=True, slots=True)
class Starter:
    """A shipped starter: its name, what it is for, and its graph document."""

    name: str
    description: str
    document: dict[str, Any]


@functools.cache
def starters() -> tuple[Starter, ...]:
    found = []
    for path in sorted(STARTERS_DIR.glob("*.yaml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        found.append(Starter(str(document["name"]), str(document["description"]), document))
    return tuple(found)


def nearest(request: str) -> tuple[Starter, float]:
    """The starter whose description is nearest to `request`, and its score (cosine, or the
    share of the request's words it has when the embedding model is not installed)."""
    options = starters()
    scores = _cosines(request)
    best = max(range(len(options)), key=lambda i: scores[i])
    return options[best], scores[best]


def _texts() -> list[str]:
    return [f"{s.name}. {s.description}" for s in starters()]


@functools.cache
def _vectors() -> tuple[list[float], ...] | None:
    """The starters' embeddings, computed once per process (None: no embedding model)."""
    from plait.llm.embedding import local_embedder

    embedder = local_embedder()
    return None if embedder is None else tuple(embedder.embed(_texts()))


def _cosines(request: str) -> list[float]:
    vectors = _vectors()
    if vectors is None:
        asked = set(_WORDS.findall(request.lower()))
        return [len(asked & set(_WORDS.findall(t.lower()))) / max(1, len(asked)) for t in _texts()]
    from plait.llm.embedding import local_embedder

    embedder = local_embedder()
    assert embedder is not None  # it embedded the starters
    [query] = embedder.embed([request])
    return [sum(a * b for a, b in zip(query, vector, strict=True)) for vector in vectors]


def operations_for(starter: Starter, request: str, name: str) -> list[dict[str, Any]]:
    """The operations that build `starter` in an empty draft, its prompts told the request."""
    document = starter.document
    told = f"The task, as the person put it: {request.strip()[:500]}"
    ops: list[dict[str, Any]] = [
        {"op": "set_graph", "field": "name", "value": name},
        {"op": "set_graph", "field": "description", "value": request.strip()[:300]},
        {"op": "set_graph", "field": "input_schema", "value": document["input_schema"]},
    ]
    for schema in document.get("schemas") or []:
        ops.append({"op": "add_schema", "id": schema["id"], "schema": schema["schema"]})
    for node in document["nodes"]:
        fields = {k: v for k, v in node.items() if k not in ("id", "type")}
        if node["type"] == "LLM_CALL":
            fields["system_prompt"] = f"{fields.get('system_prompt', '')}\n{told}".strip()
        ops.append({"op": "add_node", "id": node["id"], "type": node["type"], "fields": fields})
    for edge in document.get("edges") or []:
        connect = {"op": "connect", "from": edge["source"], "to": edge["target"]}
        connect.update({k: edge[k] for k in ("schema_id", "condition_key") if k in edge})
        ops.append(connect)
    return ops


def reply_for(starter: Starter) -> str:
    return (
        f"I started from the pattern \u201c{starter.name}\u201d, the nearest to what you asked: the "
        "embedded model is too small to design a graph from a description. Change it in "
        "small steps here, or configure a provider (plait.toml) to have it designed from your words."
    )
