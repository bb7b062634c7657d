"""What a person gives a chat, checked before anything is stored: a message's text, the answers
to a question card (each against its question's kind and choices), and a new graph's name."""

from __future__ import annotations

import re
from typing import Any

from plait.errors import PlaitError, Refusal
from plait.evolve.fork import free_graph_id
from plait.store import Store
from plait.store.chat import ChatSession

MAX_MESSAGE_CHARS = 8_000
MAX_ANSWER_CHARS = 2_000


class ChatError(PlaitError):
    """A chat request was refused; nothing changed."""

    kind = Refusal.INVALID


def message_text(text: str) -> str:
    text = text.strip()
    if not text:
        raise ChatError("the message is empty", "write what the graph should do, or what to change")
    if len(text) > MAX_MESSAGE_CHARS:
        raise ChatError(
            f"the message is {len(text)} characters long",
            f"keep it under {MAX_MESSAGE_CHARS}; upload long text as a file",
        )
    return text


def check_answers(questions: list[dict[str, Any]], answers: dict[str, Any]) -> dict[str, Any]:
    """The answers, each checked against its question's kind and choices."""
    known = {q["id"]: q for q in questions}
    unknown = sorted(set(answers) - set(known))
    if unknown:
        raise ChatError(f"no question {', '.join(unknown)} was asked", f"answer {', '.join(known)}")
    given: dict[str, Any] = {}
    for qid, question in known.items():
        value = answers.get(qid)
        if value is None:
            raise ChatError(f"question {qid} has no answer", "answer every question of the card")
        given[qid] = _checked(question, value)
    return given


def _checked(question: dict[str, Any], value: Any) -> Any:
    choices = question.get("choices") or []
    kind = question.get("kind")
    if kind == "multiple":
        if not isinstance(value, list) or any(v not in choices for v in value):
            raise ChatError(
                f"question {question['id']} takes a list of its choices", f"choose from: {', '.join(choices)}"
            )
        return value
    if not isinstance(value, str) or len(value) > MAX_ANSWER_CHARS:
        raise ChatError(
            f"question {question['id']} takes text of at most {MAX_ANSWER_CHARS} characters", "answer in words"
        )
    if kind == "single" and choices and value not in choices:
        raise ChatError(
            f"'{value}' is not a choice of question {question['id']}", f"choose one of: {', '.join(choices)}"
        )
    return value


def empty_graph(store: Store, session: ChatSession) -> dict[str, Any]:
    """A new graph's document: an id free in the store, the session's title as its name."""
    stem = re.sub(r"[^a-z0-9]+", "_", session.title.lower()).strip("_")[:40] or "chat_graph"
    slug = free_graph_id(store, stem)
    return {"plait": 1, "id": slug, "name": session.title, "nodes": [], "edges": [], "schemas": []}
