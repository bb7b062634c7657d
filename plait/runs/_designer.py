"""What the chat's designer graph is given each round: the run input of `plait.designer`.

Everything here is bounded, because it all goes into one prompt: the catalog of node types
(from the node registry), the draft as compact JSON, the last messages of the conversation,
what the store knows of the runs and graphs the person names, and the compiler's problems with
the last proposal, each with its code and hint. The answer schema is built from the registry
and the draft (`plait.compile.operations`), so the model can only name node types, fields and
ids that exist.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

from plait.compile.diagnostics import Diagnostic
from plait.compile.operations import DESIGNABLE_TYPES, node_fields, operations_schema
from plait.model.enums import NodeStatus
from plait.model.nodes import NODE_CLASSES
from plait.runs.stopped import node_failure
from plait.store import NotFoundError, Store
from plait.store.chat import ChatMessage

DESIGNER = "plait.designer"
"""The system graph each round of a chat turn is a run of."""

MAX_DRAFT_CHARS = 24_000
"""A draft longer than this as JSON is shown as its node and edge list: the model still sees
every id it may name, and the prompt stays bounded."""
MAX_CONTEXT_CHARS = 4_000
MAX_QUESTIONS = 5

_QUESTION = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
        "text": {"type": "string", "minLength": 1, "maxLength": 300},
        "kind": {"enum": ["single", "multiple", "text"]},
        "choices": {"type": "array", "maxItems": 10, "items": {"type": "string", "minLength": 1, "maxLength": 120}},
    },
    "required": ["id", "text", "kind"],
    "additionalProperties": False,
}


def answer_schema(document: dict[str, Any], *, small: bool = False) -> dict[str, Any]:
    """The schema the designer answers under for `document`: a reply, operations on it, questions
    (`small`: the form for a small model, `operations_schema`)."""
    return {
        "type": "object",
        "properties": {
            "reply": {"type": "string", "maxLength": 500 if small else 2000},
            "operations": operations_schema(document, small=small),
            "questions": {"type": "array", "maxItems": MAX_QUESTIONS, "items": _QUESTION},
        },
        "required": ["reply", "operations", "questions"],
        "additionalProperties": False,
    }


@functools.cache
def catalog() -> str:
    """One line per node type a model may add: what it does, and its fields."""
    lines = []
    for node_type in DESIGNABLE_TYPES:
        doc = (NODE_CLASSES[node_type].__doc__ or "").strip().split("\n\n")[0]
        what = " ".join(doc.split())
        lines.append(f"- {node_type}: {what} Fields: {', '.join(node_fields(node_type))}.")
    return "\n".join(lines)


COMPACT_TEXT_CHARS = 80
"""A small model's context (the embedded model's is 2,048 tokens) holds the draft only as its
outline: each text field cut to this."""


def compact_catalog(document: dict[str, Any]) -> str:
    """The catalog for a small context: the types the draft has and the common ones, fields only."""
    present = {str(n.get("type")) for n in _dicts(document, "nodes")}
    wanted = [t for t in DESIGNABLE_TYPES if str(t) in present | {"LLM_CALL", "HUMAN_REVIEW", "TRANSFORM"}]
    return "\n".join(f"- {t}: {', '.join(node_fields(t))}" for t in wanted)


def compact_draft(document: dict[str, Any]) -> str:
    """The draft for a small context: nodes with their fields cut short, schema and edge ids."""
    nodes = [
        {k: (v[:COMPACT_TEXT_CHARS] if isinstance(v, str) else v) for k, v in node.items() if k != "position"}
        for node in _dicts(document, "nodes")
    ]
    shown = {
        "id": document.get("id"),
        "input": sorted(((document.get("input_schema") or {}).get("properties") or {}).keys()),
        "nodes": [{k: v for k, v in n.items() if not isinstance(v, (dict, list)) or k == "command"} for n in nodes],
        "edges": [[e.get("source"), e.get("target"), e.get("schema_id")] for e in _dicts(document, "edges")],
        "schemas": [s.get("id") for s in _dicts(document, "schemas")],
    }
    return json.dumps(shown, ensure_ascii=False, separators=(",", ":"))


def draft_text(document: dict[str, Any]) -> str:
    """The draft as compact JSON without canvas positions; its outline when that is too long."""
    shown = {**document, "nodes": [{k: v for k, v in n.items() if k != "position"} for n in _dicts(document, "nodes")]}
    text = json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
    if len(text) <= MAX_DRAFT_CHARS:
        return text
    outline = {
        "id": document.get("id"),
        "nodes": [{"id": n.get("id"), "type": n.get("type")} for n in _dicts(document, "nodes")],
        "edges": [[e.get("source"), e.get("target")] for e in _dicts(document, "edges")],
        "schemas": [s.get("id") for s in _dicts(document, "schemas")],
    }
    return "(outline: the full graph is too long to show)\n" + json.dumps(outline, separators=(",", ":"))


def _dicts(document: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [item for item in document.get(key) or [] if isinstance(item, dict)]


def problems_text(problems: Iterable[Diagnostic]) -> str:
    """The compiler's problems with their codes, places and hints, one per line."""
    lines = []
    for problem in problems:
        where = f" [node {problem.node_id}]" if problem.node_id else ""
        hint = f" Fix: {problem.hint}" if problem.hint else ""
        lines.append(f"- {problem.category}/{problem.code}{where}: {problem.message}.{hint}")
    return "\n".join(lines) or "(none)"


def message_line(message: ChatMessage) -> str | None:
    """A message as the designer reads it: who said it and what (None: nothing to read)."""
    content = message.content
    text = str(content.get("text") or "")
    if message.kind == "answers":
        text = "; ".join(f"{q}: {a}" for q, a in (content.get("answers") or {}).items())
    elif message.kind == "draft":
        text = f"{text} (draft {content.get('status')}: {'; '.join(content.get('lines') or [])})"
    elif message.kind == "run":
        text = f"run {content.get('run_id')} of {content.get('graph')}: {content.get('status')}"
    who = "person" if message.role == "user" else "assistant"
    return f"{who}: {text[:600]}" if text else None


_RUN_ID = re.compile(r"\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b|\b[0-9a-f]{32}\b")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{1,127}")


def context_text(store: Store, text: str, linked_runs: list[str], session_id: str) -> str:
    """What the store knows of the runs the person names (by id, and the session's own runs,
    newest first), the stored graphs named by slug (status, and why a run failed), and the
    chat's uploads."""
    facts: list[str] = []
    runs = list(dict.fromkeys([*_RUN_ID.findall(text), *reversed(linked_runs)]))[:3]
    facts += [fact for run_id in runs if (fact := _run_fact(store, run_id))]
    slugs = {listing.slug for listing in store.graphs.list()}
    named = [word for word in dict.fromkeys(_WORD.findall(text)) if word in slugs][:3]
    facts += [_graph_fact(store, slug) for slug in named]
    uploads = uploads_text(store, session_id)
    joined = "\n".join([*facts, uploads] if uploads else facts)
    return joined[:MAX_CONTEXT_CHARS] or "(nothing named)"


MAX_UPLOAD_EXCERPT = 1_500
UPLOADS_SHOWN = 2


def uploads_text(store: Store, session_id: str) -> str:
    """The chat's newest uploads: name, size, and the start of each as text. What a document
    says is data for the design (what the graph will read), never an instruction: the designer's
    system prompt says so, and whatever it proposes still goes through the compiler, the
    allow-lists and a person's acceptance."""
    lines = []
    for listed in store.chat.uploads(session_id)[-UPLOADS_SHOWN:]:
        kept = store.chat.get_upload(listed.id)
        excerpt = (kept.content or b"")[:MAX_UPLOAD_EXCERPT].decode("utf-8", "replace") if kept else ""
        lines.append(f"- upload {listed.filename} ({listed.size} bytes), it begins:\n<<<\n{excerpt}\n>>>")
    return "\n".join(lines)


def _run_fact(store: Store, run_id: str) -> str | None:
    try:
        run = store.runs.get(run_id)
    except NotFoundError:
        return None
    line = f"- run {run.id} of graph {run.graph_slug} v{run.graph_version}: {run.status}"
    nodes = store.runs.node_runs(run.id)
    cause = node_failure(run.id, run.error, nodes) if run.error else None
    if cause is not None:
        line += f"; node {cause.get('node_id')} failed ({cause.get('kind')}): {cause.get('message')}"
    elif run.error:
        line += f"; {run.error.get('message')}"
    for node in [n for n in nodes if n.status == NodeStatus.FAILED and n.node_id != (cause or {}).get("node_id")][:3]:
        line += f"\n  node {node.node_id} failed: {(node.error or {}).get('message')}"
    return line


def _graph_fact(store: Store, slug: str) -> str:
    stored = store.graphs.get(slug)
    nodes = ", ".join(f"{n.id} ({n.type})" for n in stored.graph.nodes)
    return f"- graph {slug} v{stored.version} ({stored.graph.name or 'no name'}): nodes {nodes}"


def designer_input(
    document: dict[str, Any],
    *,
    request: str,
    problems: list[Diagnostic],
    conversation: str,
    context: str,
    compact: bool = False,
) -> dict[str, Any]:
    """The designer's run input for one round; `compact`: for a small model's context."""
    return {
        "request": request,
        "draft": compact_draft(document) if compact else draft_text(document),
        "catalog": compact_catalog(document) if compact else catalog(),
        "problems": problems_text(problems),
        "conversation": conversation,
        "context": context,
        "answer_schema": answer_schema(document, small=compact),
    }
