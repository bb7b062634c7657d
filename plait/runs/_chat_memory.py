"""What of a long conversation the chat's designer reads, and what the chat remembers of it.

Up to `compress_at` of `history_tokens` (`[context]` of the settings in force: a change made
while the server runs applies to the next turn) the conversation goes in whole. Past it, the
budget is split by the three shares: the newest turns verbatim, a bounded running summary of the older ones (each
turn's first sentence, newest first until its share is spent), and the facts the chat's memory
recalls for the request. Which turns, summaries and facts went in is returned with the text, and
the chat records it in the designer run's input, so a run says what it was shown.

Turns that leave the verbatim window are handed to `plait.memory_extract` first (one recorded
run), and the facts it finds are remembered in the session's scope with the messages and the
node run they came from: recalled later instead of the turns themselves.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from plait.config import ContextConfig, context_settings
from plait.llm.tokens import EstimateCounter
from plait.model.enums import RunStatus
from plait.runs._designer import message_line
from plait.runs.memory import recall, remember
from plait.runs.start import start_run
from plait.store import Store
from plait.store.chat import ChatMessage, ChatSession

HISTORY_TOKENS = ContextConfig().history_tokens
"""The default of the conversation's share of the designer's prompt, in tokens (estimated: ~4
characters each): small, so that it fits beside the draft and the catalog in a small model's
context too (`[context] history_tokens`)."""
COMPRESS_AT = ContextConfig().compress_at
SPLIT = ContextConfig().split
"""The default shares: recent turns verbatim, the running summary, recalled facts. The facts'
share is the larger of the two older ones: the summary's first sentences are of turns whose
facts are remembered anyway, and a fact recalled just past a smaller share was the answer lost
most often (bench/memory.py). What the facts leave unspent goes to the summary."""
SUMMARY_CHARS = 160
"""An older turn's share of the summary: its first sentence, at most this long."""
EXTRACT = "plait.memory_extract"
MAX_EXTRACTED_TURNS = 40
"""Turns one extraction reads; older ones not yet read are read by the next."""
KNOWN_FACTS = 50
"""The newest facts an extraction is shown, by subject and predicate, so that a changed value is
written under the ones held and replaces it."""
RECALL_MORE = 40
"""Facts recalled past the best ones and their hops, for the facts' share to be spent on."""
_COUNTER = EstimateCounter()
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def scope_of(session_id: str) -> str:
    return f"chat:{session_id}"


@dataclass
class Shown:
    """What the designer is shown of the conversation, and which items those are."""

    text: str
    turns: list[int] = field(default_factory=list)
    summarised: list[int] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)

    @property
    def items(self) -> dict[str, Any]:
        return {"turns": self.turns, "summarised": self.summarised, "facts": self.facts}


def conversation_shown(store: Store, session: ChatSession, messages: list[ChatMessage], request: str) -> Shown:
    """The conversation before the request within `history_tokens`, as the module doc says."""
    context = context_settings()
    budget, (recent_share, summary_share, facts_share) = context.history_tokens, context.split
    lines = [(m.seq, line) for m in messages if (line := message_line(m)) is not None]
    total = sum(_COUNTER.count(line) for _, line in lines)
    if total <= context.compress_at * budget:
        return Shown("\n".join(line for _, line in lines) or "(this is the first message)", [s for s, _ in lines])
    recent, older = _newest_within(lines, recent_share * budget)
    facts, fact_ids = _facts(store, session, request, facts_share * budget)
    unspent = facts_share * budget - _COUNTER.count(facts)  # few facts yet: the summary takes the rest
    summary, summarised = _summary(older, summary_share * budget + unspent)
    parts = [
        "Earlier in this conversation (first sentences):\n" + (summary or "(nothing kept)"),
        "Remembered facts:\n" + (facts or "(none recalled)"),
        "The latest turns:\n" + "\n".join(line for _, line in recent),
    ]
    return Shown("\n\n".join(parts), [s for s, _ in recent], summarised, fact_ids)


def _newest_within(lines: list[tuple[int, str]], budget: float) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(the newest lines within `budget` tokens, in order; the lines before them)."""
    spent, cut = 0, len(lines)
    while cut > 0 and spent + _COUNTER.count(lines[cut - 1][1]) <= budget:
        cut -= 1
        spent += _COUNTER.count(lines[cut][1])
    return lines[cut:], lines[:cut]


def _summary(older: list[tuple[int, str]], budget: float) -> tuple[str, list[int]]:
    kept: list[tuple[int, str]] = []
    spent = 0
    for seq, line in reversed(older):
        first = _SENTENCE.split(line, maxsplit=1)[0][:SUMMARY_CHARS]
        cost = _COUNTER.count(first)
        if spent + cost > budget:
            break
        kept.append((seq, first))
        spent += cost
    kept.reverse()
    return "\n".join(text for _, text in kept), [seq for seq, _ in kept]


def _facts(store: Store, session: ChatSession, request: str, budget: float) -> tuple[str, list[str]]:
    """The recalled facts within `budget`, best first: as many as fit, not a fixed number."""
    lines: list[str] = []
    ids: list[str] = []
    spent = 0
    for hit in recall(store, scope_of(session.id), request, then=RECALL_MORE):
        cost = _COUNTER.count(f"- {hit.fact.text}")
        if spent + cost > budget:
            continue
        lines.append(f"- {hit.fact.text}")
        ids.append(hit.fact.id)
        spent += cost
    return "\n".join(lines), ids


async def remember_leaving(
    store: Store,
    session_id: str,
    drive: Callable[[str], Awaitable[Any]],
    start: Callable[[dict[str, Any]], str],
) -> str | None:
    """Extract the facts of the turns about to leave the verbatim window that no extraction has
    read yet, and remember them (the extraction run's id; None when there was nothing to read).
    The request being answered is the session's newest message and never leaves."""
    asked = await asyncio.to_thread(_leaving, store, session_id)
    if asked is None:
        return None
    run_input, leaving = asked
    run_id = await asyncio.to_thread(start, run_input)
    await drive(run_id)
    await asyncio.to_thread(_keep, store, session_id, run_id, leaving)
    return run_id


def _leaving(store: Store, session_id: str) -> tuple[dict[str, Any], list[int]] | None:
    """The extraction's input and the turns it reads, or None when none is due."""
    session = store.chat.get_session(session_id)
    if session is None:
        return None
    messages = store.chat.latest_messages(session_id)[:-1]
    lines = [(m.seq, line) for m in messages if (line := message_line(m)) is not None]
    context = context_settings()
    if sum(_COUNTER.count(line) for _, line in lines) <= context.compress_at * context.history_tokens:
        return None
    _recent, older = _newest_within(lines, context.recent_share * context.history_tokens)
    leaving = [(seq, line) for seq, line in older if seq > session.memory_seq][:MAX_EXTRACTED_TURNS]
    if not leaving:
        return None
    held = store.memory.facts(scope_of(session_id), limit=KNOWN_FACTS)
    known = "\n".join(f"- {f.subject} | {f.predicate} | {f.object}" for f in held) or "(none)"
    return {"turns": "\n".join(line for _, line in leaving), "known": known}, [seq for seq, _ in leaving]


def _keep(store: Store, session_id: str, run_id: str, leaving: list[int]) -> None:
    """Remember what the extraction found, with where it came from; the turns count as read
    either way (a failed extraction is a recorded run to look at, not a turn to retry forever)."""
    run = store.runs.get(run_id)
    if run.status == RunStatus.COMPLETED and isinstance(run.output, dict):
        node = next(n for n in store.runs.node_runs(run_id) if n.node_id == "extract")
        source = {"messages": leaving, "session_id": session_id, "run_id": run_id, "node_run_id": node.id}
        remember(store, scope_of(session_id), list(run.output.get("facts") or []), source=source, by="memory")
    store.chat.set_memory_seq(session_id, leaving[-1])


def extraction_starter(store: Store, check_run: Any, llm: dict[str, Any] | None) -> Callable[[dict[str, Any]], str]:
    """How the chat starts an extraction run: like its designer's, on the same model."""
    return lambda run_input: start_run(store, EXTRACT, run_input, files=False, check=check_run, llm=llm)
