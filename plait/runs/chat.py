"""A chat that designs, changes and runs graphs: the use case every chat surface calls.

A person writes what they want; each round of the turn is one run of the `plait.designer`
system graph, so its prompts, tokens and cost are recorded like any run's. The designer answers
with operations on a draft (never a whole graph), under a schema where node types, fields and
existing ids are enums. The patched draft is compiled as an uploaded graph would be (no file is
read) and checked against what this process may execute (programs the deployer allowed, MCP
servers, providers):

- problems of category `config` go back to the designer with their codes and hints, for at
  most `MAX_ROUNDS` rounds, stopping early when a round does not leave fewer problems;
- problems of category `planning`, and questions the designer asks, become a question card: the
  draft waits, and the person's answers start the next round;
- a valid draft is shown as a diff against the graph it started from.

A draft never changes a stored graph: accepting it stores a new version or a fork through the
ordinary save, rejecting it leaves the graph as it was, and nothing from a chat runs before a
person accepts it. Running the accepted graph starts an ordinary run, linked into the chat.

The surface passes in how it executes runs and what it can execute (`ChatPorts`), and hears of
progress through `notify`; the messages are stored, numbered per session, so a stream of them
can be resumed.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from plait.compile.diagnostics import Category, Diagnostic
from plait.compile.document_diff import diff_documents
from plait.compile.dump import graph_to_data
from plait.compile.operations import apply_operations
from plait.engine.run_input import stored_graph
from plait.errors import PlaitError, Refusal
from plait.evolve.fork import fork_graph
from plait.evolve.skills import skill_source
from plait.evolve.upload import UploadMode, check_upload, save_upload
from plait.model.enums import RunStatus, SourceType
from plait.model.graph import GraphDef
from plait.runs._chat_input import ChatError as ChatError
from plait.runs._chat_input import check_answers, empty_graph, message_text
from plait.runs._chat_memory import conversation_shown, extraction_starter, remember_leaving
from plait.runs._designer import (
    DESIGNER,
    MAX_QUESTIONS,
    context_text,
    designer_input,
)
from plait.runs._starters import nearest, operations_for, reply_for
from plait.runs.start import start_run
from plait.runs.stopped import with_cause
from plait.store import Store, StoredGraph
from plait.store.chat import ChatDraft, ChatMessage, ChatSession, ChatUpload, DraftStatus

MAX_ROUNDS = 3
"""Designer rounds in one turn: the first proposal and at most two repairs."""
MAX_UPLOAD_BYTES = 10 * 2**20
OPEN_STATUSES = (DraftStatus.PROPOSED, DraftStatus.INVALID, DraftStatus.QUESTIONS)


@dataclass(frozen=True, slots=True)
class Turn:
    """A turn taken but not carried out yet: the person's message (or answers) is stored."""

    session: ChatSession
    draft: ChatDraft
    request: str
    first_seq: int
    """The number of the turn's first message (the person's)."""


@dataclass(frozen=True, slots=True)
class _Rounds:
    """What one turn's rounds gave: the request, the last reply, every designer run, every
    operation applied to the draft so far, and those of the last round."""

    request: str
    reply: str
    runs: list[str]
    operations: list[Any]
    last_operations: list[Any]
    rounds: int
    """Designer runs this turn took."""


NEEDS_PROVIDER = (
    "The embedded model could not make this valid: this change needs a configured provider "
    "(a model in plait.toml), or smaller steps."
)


@dataclass(frozen=True)
class ChatPorts:
    """What a chat needs of the surface it runs in.

    `drive(run_id)` executes a run until it ends or waits for a person; `check_graph(graph)`
    raises when this process could not execute `graph` (a program the deployer did not allow, an
    MCP server or provider not configured); `check_run(stored)` is the surface's check before a
    run row exists; `llm` is the model selection runs started here record; `notify(session_id,
    event)` hears of progress (a round started or ended, a message stored, a run started)."""

    drive: Callable[[str], Awaitable[Any]]
    check_graph: Callable[[GraphDef], None]
    check_run: Callable[[StoredGraph], None] | None = None
    llm: dict[str, Any] | None = None
    notify: Callable[[str, dict[str, Any]], None] = field(default=lambda _session, _event: None)


class Chat:
    """Sessions of the chat over one store, in one surface."""

    def __init__(self, store: Store, ports: ChatPorts) -> None:
        self.store = store
        self.ports = ports

    # -- sessions ---------------------------------------------------------------------------------

    def open(self, title: str | None = None, graph: str | None = None) -> ChatSession:
        """A new session, working on stored graph `graph` (id or slug) when given."""
        graph_id = self._graph(graph).graph_id if graph else None
        return self.store.chat.create_session((title or "New chat")[:200], graph_id)

    def session(self, session_id: str) -> ChatSession:
        found = self.store.chat.get_session(session_id)
        if found is None:
            raise ChatError(
                f"no chat session '{session_id}'", "list sessions with `plait chat --list`", kind=Refusal.NOT_FOUND
            )
        return found

    # -- a turn -----------------------------------------------------------------------------------

    def take_message(self, session_id: str, text: str) -> Turn:
        """Store the person's message: the turn it starts (`design` carries it out). Refused
        before anything is stored when the session is unknown or the text is empty or too long."""
        session = self.session(session_id)
        text = message_text(text)
        first = self._say(session.id, "user", "text", {"text": text})
        draft = self.store.chat.open_draft(session.id) or self._new_draft(session)
        return Turn(session, draft, text, first.seq)

    def take_answers(self, session_id: str, answers: dict[str, Any]) -> Turn:
        """Store the answers to the open question card: the turn they resume. Refused when no
        card waits, or an answer does not fit its question."""
        session = self.session(session_id)
        draft = self.store.chat.open_draft(session.id)
        card = self._card(session.id)
        if draft is None or draft.status != DraftStatus.QUESTIONS or card is None:
            raise ChatError(
                "no question is waiting for an answer in this chat", "send a message instead", kind=Refusal.CONFLICT
            )
        given = check_answers(card.content["questions"], answers)
        first = self._say(session.id, "user", "answers", {"answers": given})
        asked = "; ".join(f"{q['text']} -> {given.get(q['id'])}" for q in card.content["questions"])
        return Turn(session, draft, f"{card.content.get('request', '')}\nAnswers: {asked}", first.seq)

    async def design(self, turn: Turn) -> list[ChatMessage]:
        """Carry out a turn: designer rounds until a valid draft, an invalid one the repairs
        stopped improving, or a question card; the messages the turn stored, its own first."""
        await self._design(turn.session, turn.draft, turn.request)
        return self.store.chat.messages(turn.session.id, after_seq=turn.first_seq - 1)

    async def send(self, session_id: str, text: str) -> list[ChatMessage]:
        """`take_message` and `design` in one call."""
        return await self.design(self.take_message(session_id, text))

    async def answer(self, session_id: str, answers: dict[str, Any]) -> list[ChatMessage]:
        """`take_answers` and `design` in one call."""
        return await self.design(self.take_answers(session_id, answers))

    async def _design(self, session: ChatSession, draft: ChatDraft, request: str) -> None:
        """The rounds of a turn. What touches the store or compiles runs on a worker thread: a
        chat inside a server must not hold its event loop."""
        if self._embedded_only() and not draft.document.get("nodes"):
            await asyncio.to_thread(self._by_retrieval, session, draft, request)
            return
        if not self._embedded_only():  # the embedded model is too small to tell a fact from a request
            start = extraction_starter(self.store, self.ports.check_run, self.ports.llm)
            await remember_leaving(self.store, session.id, self.ports.drive, start)
        document, runs, operations = draft.document, list(draft.designer_runs), list(draft.operations)
        problems: list[Diagnostic] = []
        reply, last = "", []
        for round_no in range(1, MAX_ROUNDS + 1):
            self.ports.notify(session.id, {"event": "round", "round": round_no, "draft_id": draft.id})
            run_id = await asyncio.to_thread(self._start_designer, session, document, request, problems)
            await self.ports.drive(run_id)
            runs.append(run_id)
            design = await asyncio.to_thread(self._designed, run_id)
            if design is None:
                await asyncio.to_thread(self._failed, session, draft, run_id, runs)
                return
            if design["questions"]:
                ask = functools.partial(self._ask_person, session, draft, design["reply"], design["questions"])
                await asyncio.to_thread(ask, request, runs, document)
                return
            reply, last = design["reply"], design["operations"]
            operations += last
            document, found = await asyncio.to_thread(self._patched, document, design["operations"])
            shrinking = not problems or len(found) < len(problems)
            problems = found
            if all(p.category is Category.PLANNING for p in found) or not shrinking:
                break
        turn = _Rounds(request, reply, runs, operations, last, round_no)
        await asyncio.to_thread(self._proposed, session, draft, document, problems, turn)

    def _embedded_only(self) -> bool:
        """The designer's model is the embedded one: too small to design a graph from words."""
        return (self.ports.llm or {}).get("llm") == "local"

    def _by_retrieval(self, session: ChatSession, draft: ChatDraft, request: str) -> None:
        """A new graph from the nearest starter, when only the embedded model is at hand."""
        starter, _score = nearest(request)
        operations = operations_for(starter, request, session.title)
        document, problems = self._patched(draft.document, operations)
        rounds = _Rounds(request, reply_for(starter), list(draft.designer_runs), operations, operations, 0)
        self._proposed(session, draft, document, problems, rounds)

    def _start_designer(
        self, session: ChatSession, document: dict[str, Any], request: str, problems: list[Diagnostic]
    ) -> str:
        """Start one designer run for this round (the surface drives it)."""
        messages = self.store.chat.latest_messages(session.id)
        linked = [m.run_id for m in messages if m.kind == "run" and m.run_id]
        shown = conversation_shown(self.store, session, messages[:-1], request)
        run_input = designer_input(
            document,
            request=request,
            problems=problems,
            conversation=shown.text,
            context=context_text(self.store, request, linked, session.id),
            compact=self._embedded_only(),
        )
        run_input["conversation_items"] = shown.items  # what of the conversation it was shown
        run_id = start_run(self.store, DESIGNER, run_input, files=False, check=self.ports.check_run, llm=self.ports.llm)
        self.ports.notify(session.id, {"event": "designer_run", "run_id": run_id})
        return run_id

    def _designed(self, run_id: str) -> dict[str, Any] | None:
        """The designer run's answer; None when the run did not complete."""
        run = self.store.runs.get(run_id)
        return run.output if run.status == RunStatus.COMPLETED and isinstance(run.output, dict) else None

    def _patched(self, document: dict[str, Any], operations: list[Any]) -> tuple[dict[str, Any], list[Diagnostic]]:
        """`document` with `operations` applied, and every problem left: the operations that did
        not apply, then the compiler's and this process's."""
        patched, applied = apply_operations(document, operations)
        return patched, [*applied, *self._check(patched)]

    def _check(self, document: dict[str, Any]) -> list[Diagnostic]:
        """The compiler's errors for `document`, and what this process could not execute."""
        result = check_upload(document, skills=skill_source(self.store))
        if not result.valid or result.expanded is None:
            return list(result.errors)
        try:
            self.ports.check_graph(result.expanded)
        except PlaitError as refused:
            hint = "Use only programs, MCP servers and models this server is configured with, or leave the node out."
            return [Diagnostic(Category.CONFIG, "not_executable", refused.message, hint=hint)]
        return []

    # -- what a turn leaves ---------------------------------------------------------------------

    def _proposed(
        self,
        session: ChatSession,
        draft: ChatDraft,
        document: dict[str, Any],
        problems: list[Diagnostic],
        turn: _Rounds,
    ) -> None:
        """The turn's draft: valid (a diff to accept), invalid (what is still wrong), or, when
        only problems of the design are left, a question card for the person."""
        if problems and all(p.category is Category.PLANNING for p in problems):
            questions = [
                {"id": f"q{i + 1}", "text": f"{p.message}. {p.hint or ''}".strip()[:300], "kind": "text"}
                for i, p in enumerate(problems[:MAX_QUESTIONS])
            ]
            self._ask_person(session, draft, turn.reply, questions, turn.request, turn.runs, document)
            return
        if not problems and not turn.operations:  # a reply, no change: nothing to accept
            text = turn.reply or "I did not change the graph."
            self._say(session.id, "assistant", "text", {"text": text}, run_id=turn.runs[-1] if turn.runs else None)
            return
        status = DraftStatus.INVALID if problems else DraftStatus.PROPOSED
        errors = [p.to_json() for p in problems]
        reply = turn.reply
        if problems and self._embedded_only():
            reply += " " + NEEDS_PROVIDER
        draft = self.store.chat.update_draft(
            draft.id,
            document=document,
            operations=turn.operations,
            diagnostics=errors,
            status=status,
            designer_runs=turn.runs,
        )
        diff = diff_documents(self.base_document(draft), document)
        content = {
            "text": reply,
            "status": str(status),
            "diff": diff.to_json(),
            "lines": diff.lines(),
            "operations": turn.last_operations,
            "errors": errors,
            "rounds": turn.rounds,
        }
        last_run = turn.runs[-1] if turn.runs else None
        self._say(session.id, "assistant", "draft", content, draft_id=draft.id, run_id=last_run)

    def _ask_person(
        self,
        session: ChatSession,
        draft: ChatDraft,
        reply: str,
        questions: list[dict[str, Any]],
        request: str,
        runs: list[str],
        document: dict[str, Any],
    ) -> None:
        self.store.chat.update_draft(draft.id, status=DraftStatus.QUESTIONS, designer_runs=runs, document=document)
        content = {"text": reply, "questions": questions[:MAX_QUESTIONS], "request": request}
        self._say(session.id, "assistant", "questions", content, draft_id=draft.id, run_id=runs[-1])

    def _failed(self, session: ChatSession, draft: ChatDraft, run_id: str, runs: list[str]) -> None:
        self.store.chat.update_draft(draft.id, designer_runs=runs)
        run = self.store.runs.get(run_id)
        error = with_cause(run.id, run.error, self.store.runs.node_runs(run.id)) or {}
        cause = error.get("node_error") or error
        reason = cause.get("message") or f"the designer run ended {run.status}"
        text = f"The designer could not answer: {reason} (its run {run_id} shows every attempt)."
        if self._embedded_only():
            text += " " + NEEDS_PROVIDER
        content = {"text": text, "code": "designer_failed", "error": error}
        self._say(session.id, "assistant", "error", content, run_id=run_id)

    def _say(self, session_id: str, role: str, kind: str, content: dict[str, Any], **links: Any) -> ChatMessage:
        message = self.store.chat.add_message(session_id, role, kind, content, **links)
        self.ports.notify(session_id, {"event": "message", "seq": message.seq})
        return message

    def _card(self, session_id: str) -> ChatMessage | None:
        cards = [m for m in self.store.chat.messages(session_id) if m.kind == "questions"]
        return cards[-1] if cards else None

    # -- drafts -----------------------------------------------------------------------------------

    def _new_draft(self, session: ChatSession) -> ChatDraft:
        base = self.store.graphs.get(session.graph_id) if session.graph_id else None
        document = graph_to_data(base.graph) if base is not None else empty_graph(self.store, session)
        for key in ("version", "schema_version", "created_at", "updated_at", "source_type"):
            document.pop(key, None)
        return self.store.chat.add_draft(
            session.id,
            base_graph_id=base.graph_id if base else None,
            base_version=base.version if base else None,
            document=document,
            operations=[],
            diagnostics=[],
            status=DraftStatus.PROPOSED,
            designer_runs=[],
        )

    def base_document(self, draft: ChatDraft) -> dict[str, Any] | None:
        """The graph the draft started from, as data (None: the draft is a new graph)."""
        if draft.base_graph_id is None or draft.base_version is None:
            return None
        return graph_to_data(self.store.graphs.get(draft.base_graph_id, draft.base_version).graph)

    def draft(self, session_id: str, draft_id: str) -> ChatDraft:
        found = self.store.chat.get_draft(draft_id)
        if found is None or found.session_id != session_id:
            raise ChatError(
                f"no draft '{draft_id}' in this chat", "the chat's messages name its drafts", kind=Refusal.NOT_FOUND
            )
        return found

    def accept(self, session_id: str, draft_id: str, *, fork: bool = False) -> ChatMessage:
        """Store the draft: a new version of its graph, a fork of it, or a new graph."""
        session, draft = self.session(session_id), self.draft(session_id, draft_id)
        if draft.status != DraftStatus.PROPOSED or not draft.operations:  # nothing proposed yet
            raise ChatError(
                f"draft '{draft_id}' is {draft.status}, not a valid proposal",
                "accept a draft the chat proposed as valid; ask the chat to fix this one first",
                kind=Refusal.CONFLICT,
            )
        problems = self._check(draft.document)
        if problems:
            raise ChatError(
                f"draft '{draft_id}' no longer compiles: {problems[0].message}",
                "ask the chat to fix it",
                kind=Refusal.CONFLICT,
            )
        stored = self._store_draft(draft, fork)
        self.store.chat.update_draft(
            draft.id,
            status=DraftStatus.ACCEPTED,
            result_graph_id=stored.graph_id,
            result_version=stored.version,
            decided_at=_now(),
        )
        self.store.chat.set_session_graph(session.id, stored.graph_id)
        content = {"text": f"Stored {stored.slug} v{stored.version}.", "status": "accepted", "graph": stored.slug}
        return self._say(session.id, "assistant", "draft", {**content, "version": stored.version}, draft_id=draft.id)

    def _store_draft(self, draft: ChatDraft, fork: bool) -> StoredGraph:
        document = dict(draft.document)
        if draft.base_graph_id is None:
            return save_upload(self.store, document, mode=UploadMode.CREATE).stored
        base = self.store.graphs.get(draft.base_graph_id)
        if fork or base.source_type == SourceType.SYSTEM:
            copy = fork_graph(self.store, base.slug)
            saved = save_upload(self.store, {**document, "id": copy.slug}, mode=UploadMode.UPDATE, ref=copy.slug)
            return saved.stored
        document["id"] = base.slug
        mode = UploadMode.UPDATE
        return save_upload(self.store, document, mode=mode, ref=base.slug, base_version=draft.base_version).stored

    def reject(self, session_id: str, draft_id: str) -> ChatMessage:
        """Drop the draft; the graph it started from is left exactly as it was."""
        self.session(session_id)
        draft = self.draft(session_id, draft_id)
        if draft.status not in OPEN_STATUSES:
            raise ChatError(f"draft '{draft_id}' is {draft.status} already", "nothing to reject", kind=Refusal.CONFLICT)
        self.store.chat.update_draft(draft.id, status=DraftStatus.REJECTED, decided_at=_now())
        return self._say(
            session_id, "assistant", "draft", {"text": "Draft rejected.", "status": "rejected"}, draft_id=draft.id
        )

    # -- runs -------------------------------------------------------------------------------------

    def start(self, session_id: str, run_input: dict[str, Any], graph: str | None = None) -> ChatMessage:
        """Start an ordinary run of the session's graph (or `graph`), linked into the chat; the
        surface drives it (`follow`)."""
        session = self.session(session_id)
        ref = graph or session.graph_id
        if ref is None:
            raise ChatError("this chat has no graph to run yet", "accept a draft first, or name a stored graph")
        stored = self._graph(ref)
        run_id = start_run(
            self.store, stored.graph_id, run_input, files=False, check=self.ports.check_run, llm=self.ports.llm
        )
        self.ports.notify(session.id, {"event": "run", "run_id": run_id})
        content = {"run_id": run_id, "graph": stored.slug, "version": stored.version, "status": "pending"}
        return self._say(session.id, "assistant", "run", content, run_id=run_id)

    async def follow(self, session_id: str, run_id: str) -> ChatMessage:
        """Drive a run the chat started until it ends or waits; the message saying how it ended."""
        await self.ports.drive(run_id)
        run = self.store.runs.get(run_id)
        error = None
        if run.error is not None:
            error = with_cause(run.id, run.error, self.store.runs.node_runs(run.id))
        content = {
            "run_id": run.id,
            "graph": run.graph_slug,
            "version": run.graph_version,
            "status": str(run.status),
            "output": run.output,
            "error": error,
            "tokens": run.tokens_input + run.tokens_output,
            "cost_usd": run.cost_usd,
        }
        return self._say(session_id, "assistant", "run", content, run_id=run.id)

    def keep_upload(
        self, session_id: str, filename: str, content: bytes, media_type: str = "text/plain", purpose: str = "run_input"
    ) -> ChatUpload:
        """Keep a file in the chat: input for a run (`upload_text`), or for a knowledge base."""
        self.session(session_id)
        if len(content) > MAX_UPLOAD_BYTES:
            raise ChatError(
                f"'{filename}' is {len(content)} bytes", f"keep files under {MAX_UPLOAD_BYTES // 2**20} MiB"
            )
        return self.store.chat.add_upload(session_id, filename, media_type, content, purpose)

    def upload_text(self, session_id: str, upload_id: str) -> str:
        """An upload of this chat as text, for a run's input."""
        kept = self.store.chat.get_upload(upload_id)
        if kept is None or kept.session_id != session_id or kept.content is None:
            raise ChatError(f"no upload '{upload_id}' in this chat", "upload the file first", kind=Refusal.NOT_FOUND)
        try:
            return kept.content.decode("utf-8")
        except UnicodeDecodeError:
            raise ChatError(
                f"upload '{kept.filename}' is not UTF-8 text", "upload a text file (UTF-8)", kind=Refusal.INVALID
            ) from None

    def _graph(self, ref: str) -> StoredGraph:
        """The live stored graph `ref` names (a deleted one is refused as for a run)."""
        return stored_graph(self.store, ref, hint="list the stored graphs (`plait graphs list`, GET /api/graphs)")


def _now() -> float:
    return time.time()
