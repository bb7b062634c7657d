"""Chats that design graphs with a person: sessions, their messages, the drafts proposed in them
and the files given to them (the `chat_*` tables).

A session's messages are numbered 1, 2, ... without gaps, so a stream of the session resumes
after the last number its reader saw (SSE's Last-Event-ID). The number is raised on the session
row in the transaction that inserts the message: PostgreSQL's row lock and SQLite's
`BEGIN IMMEDIATE` make concurrent writers take turns, never the same number.

Deleting a session deletes what belongs to it through the foreign keys' cascade (SQLite enforces
foreign keys on every connection of a store: `db.SQLITE_PRAGMAS`).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, delete, insert, select, update

from plait.store.chat_models import CHAT_DRAFT, CHAT_MESSAGE, CHAT_SESSION, CHAT_UPLOAD
from plait.store.db import new_id, writer
from plait.store.errors import NotFoundError


class ChatRole(StrEnum):
    """Who wrote a message."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"


class MessageKind(StrEnum):
    """What a message carries, so a client knows how to show its content."""

    TEXT = "text"
    DRAFT = "draft"
    QUESTIONS = "questions"
    ANSWERS = "answers"
    RUN = "run"
    ERROR = "error"


class DraftStatus(StrEnum):
    """Where a proposed graph stands: the first three still wait for the person (`OPEN`)."""

    PROPOSED = "proposed"
    INVALID = "invalid"
    QUESTIONS = "questions"
    ACCEPTED = "accepted"
    REJECTED = "rejected"


OPEN = (DraftStatus.PROPOSED, DraftStatus.INVALID, DraftStatus.QUESTIONS)
"""The statuses of a draft not decided yet."""


class UploadPurpose(StrEnum):
    """What a file was given for: an input of a run, or knowledge for the designer."""

    RUN_INPUT = "run_input"
    KNOWLEDGE = "knowledge"


@dataclass(frozen=True, slots=True)
class ChatSession:
    """One chat; `last_seq` is the number of its newest message (0 before the first)."""

    id: str
    title: str
    graph_id: str | None
    created_at: float
    updated_at: float
    last_seq: int
    memory_seq: int = 0
    """The newest message whose facts the chat's memory has taken (0: none yet)."""


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message, `seq` its number in the session; `draft_id`/`run_id` link what it is about."""

    id: str
    session_id: str
    seq: int
    role: ChatRole
    kind: MessageKind
    content: dict[str, Any]
    draft_id: str | None
    run_id: str | None
    created_at: float


@dataclass(frozen=True, slots=True)
class ChatDraft:
    """A graph proposed in a chat: the base version patched by `operations` into `document`, and
    once accepted, the version it was stored as (`result_graph_id`, `result_version`)."""

    id: str
    session_id: str
    base_graph_id: str | None
    base_version: int | None
    document: dict[str, Any]
    operations: list[Any]
    diagnostics: list[Any]
    status: DraftStatus
    designer_runs: list[str]
    result_graph_id: str | None
    result_version: int | None
    created_at: float
    decided_at: float | None


@dataclass(frozen=True, slots=True)
class ChatUpload:
    """A file given to a chat; `content` is None when it was read without it (listings)."""

    id: str
    session_id: str
    filename: str
    media_type: str
    size: int
    sha256: str
    content: bytes | None
    purpose: UploadPurpose
    created_at: float


_DRAFT_CHANGES = {
    "document": "document_json",
    "operations": "operations_json",
    "diagnostics": "diagnostics_json",
    "status": "status",
    "designer_runs": "designer_runs_json",
    "result_graph_id": "result_graph_id",
    "result_version": "result_version",
    "decided_at": "decided_at",
}
"""What `update_draft` may change, by keyword, and the column each keyword writes."""
_UPLOAD_LISTED = [column for column in CHAT_UPLOAD.c if column.name != "content"]


class ChatRepository:
    """Sessions, messages, drafts and uploads of chats; each write is one transaction."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    # ------------------------------------------------------------------ sessions

    def create_session(self, title: str, graph_id: str | None = None) -> ChatSession:
        """A new session, on the stored graph `graph_id` or on none yet."""
        now = time.time()
        session = ChatSession(new_id(), _bounded("title", title, 200), graph_id, now, now, 0)
        with self._writer.begin() as conn:
            conn.execute(
                insert(CHAT_SESSION).values(
                    id=session.id, title=session.title, graph_id=graph_id, created_at=now, updated_at=now, last_seq=0
                )
            )
        return session

    def get_session(self, session_id: str) -> ChatSession | None:
        """The session, or None when there is no such one."""
        with self._engine.connect() as conn:
            row = conn.execute(select(CHAT_SESSION).where(CHAT_SESSION.c.id == session_id)).first()
        return None if row is None else _session(row)

    def list_sessions(self, limit: int = 100) -> list[ChatSession]:
        """The sessions, the most recently updated first (a message, draft or upload updates one)."""
        order = (CHAT_SESSION.c.updated_at.desc(), CHAT_SESSION.c.id)
        with self._engine.connect() as conn:
            rows = conn.execute(select(CHAT_SESSION).order_by(*order).limit(limit)).all()
        return [_session(row) for row in rows]

    def set_session_graph(self, session_id: str, graph_id: str | None) -> ChatSession:
        """Point the session at another stored graph (e.g. the one its first accepted draft made)."""
        with self._writer.begin() as conn:
            self._touch(conn, session_id, graph_id=graph_id)
            row = conn.execute(select(CHAT_SESSION).where(CHAT_SESSION.c.id == session_id)).one()
        return _session(row)

    def set_memory_seq(self, session_id: str, seq: int) -> None:
        """Record that the facts of the messages up to `seq` are remembered."""
        with self._writer.begin() as conn:
            self._touch(conn, session_id, memory_seq=seq)

    def delete_session(self, session_id: str) -> bool:
        """Delete the session with its messages, drafts and uploads; False when there was none."""
        with self._writer.begin() as conn:
            return conn.execute(delete(CHAT_SESSION).where(CHAT_SESSION.c.id == session_id)).rowcount > 0

    # ------------------------------------------------------------------ messages

    def add_message(
        self,
        session_id: str,
        role: ChatRole | str,
        kind: MessageKind | str,
        content: dict[str, Any],
        *,
        draft_id: str | None = None,
        run_id: str | None = None,
    ) -> ChatMessage:
        """Append a message, numbered after the session's newest one in the same transaction."""
        role, kind = _member(ChatRole, role), _member(MessageKind, kind)
        if not isinstance(content, dict):
            raise TypeError(f"a chat message's content is a JSON object (a dict), not {type(content).__name__}")
        now = time.time()
        bump = (
            update(CHAT_SESSION)
            .where(CHAT_SESSION.c.id == session_id)
            .values(last_seq=CHAT_SESSION.c.last_seq + 1, updated_at=now)
            .returning(CHAT_SESSION.c.last_seq)
        )
        with self._writer.begin() as conn:
            seq = conn.execute(bump).scalar()
            if seq is None:
                raise _unknown_session(session_id)
            message = ChatMessage(new_id(), session_id, seq, role, kind, content, draft_id, run_id, now)
            conn.execute(insert(CHAT_MESSAGE).values(_message_row(message)))
        return message

    def messages(self, session_id: str, after_seq: int = 0, limit: int = 1000) -> list[ChatMessage]:
        """The session's messages numbered after `after_seq`, in order (none for an unknown session)."""
        query = (
            select(CHAT_MESSAGE)
            .where(CHAT_MESSAGE.c.session_id == session_id, CHAT_MESSAGE.c.seq > after_seq)
            .order_by(CHAT_MESSAGE.c.seq)
            .limit(limit)
        )
        with self._engine.connect() as conn:
            return [_message(row) for row in conn.execute(query).all()]

    def latest_messages(self, session_id: str, limit: int = 1000) -> list[ChatMessage]:
        """The session's newest `limit` messages, in order: what a long conversation shows is
        its end, never its first thousand messages."""
        newest = (
            select(CHAT_MESSAGE)
            .where(CHAT_MESSAGE.c.session_id == session_id)
            .order_by(CHAT_MESSAGE.c.seq.desc())
            .limit(limit)
        )
        with self._engine.connect() as conn:
            return [_message(row) for row in reversed(conn.execute(newest).all())]

    # ------------------------------------------------------------------ drafts

    def add_draft(
        self,
        session_id: str,
        *,
        base_graph_id: str | None,
        base_version: int | None,
        document: dict[str, Any],
        operations: list[Any],
        diagnostics: list[Any],
        status: DraftStatus | str,
        designer_runs: list[str],
    ) -> ChatDraft:
        """Keep a proposed graph as written, valid or not (`status` says which)."""
        now = time.time()
        draft = ChatDraft(
            new_id(), session_id, base_graph_id, base_version, document, list(operations), list(diagnostics),
            _member(DraftStatus, status), list(designer_runs), None, None, now, None,
        )  # fmt: skip
        with self._writer.begin() as conn:
            self._touch(conn, session_id, updated_at=now)
            conn.execute(insert(CHAT_DRAFT).values(_draft_row(draft)))
        return draft

    def get_draft(self, draft_id: str) -> ChatDraft | None:
        """The draft, or None when there is no such one."""
        with self._engine.connect() as conn:
            row = conn.execute(select(CHAT_DRAFT).where(CHAT_DRAFT.c.id == draft_id)).first()
        return None if row is None else _draft(row)

    def drafts(self, session_id: str) -> list[ChatDraft]:
        """The session's drafts, the oldest first."""
        query = select(CHAT_DRAFT).where(CHAT_DRAFT.c.session_id == session_id)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(CHAT_DRAFT.c.created_at, CHAT_DRAFT.c.id)).all()
        return [_draft(row) for row in rows]

    def open_draft(self, session_id: str) -> ChatDraft | None:
        """The newest draft still waiting for the person (proposed, invalid or questions), if any."""
        query = (
            select(CHAT_DRAFT)
            .where(CHAT_DRAFT.c.session_id == session_id, CHAT_DRAFT.c.status.in_([s.value for s in OPEN]))
            .order_by(CHAT_DRAFT.c.created_at.desc(), CHAT_DRAFT.c.id.desc())
            .limit(1)
        )
        with self._engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else _draft(row)

    def update_draft(self, draft_id: str, **changes: Any) -> ChatDraft:
        """Change some of a draft's fields (those of `_DRAFT_CHANGES`) and return it as stored."""
        unknown = sorted(set(changes) - _DRAFT_CHANGES.keys())
        if unknown:
            raise TypeError(
                f"update_draft() cannot change {', '.join(unknown)}; it changes only {', '.join(_DRAFT_CHANGES)}"
            )
        if "status" in changes:
            changes["status"] = _member(DraftStatus, changes["status"]).value
        values = {_DRAFT_CHANGES[key]: value for key, value in changes.items()}
        with self._writer.begin() as conn:
            if values:
                conn.execute(update(CHAT_DRAFT).where(CHAT_DRAFT.c.id == draft_id).values(values))
            row = conn.execute(select(CHAT_DRAFT).where(CHAT_DRAFT.c.id == draft_id)).first()
        if row is None:
            raise NotFoundError(
                f"no chat draft '{draft_id}' in this database",
                hint="its session may have been deleted; the session's drafts list the ids it has",
            )
        return _draft(row)

    # ------------------------------------------------------------------ uploads

    def add_upload(
        self, session_id: str, filename: str, media_type: str, content: bytes, purpose: UploadPurpose | str
    ) -> ChatUpload:
        """Keep a file given to the session, with its size and SHA-256 digest."""
        now = time.time()
        upload = ChatUpload(
            new_id(), session_id, _bounded("filename", filename, 255), _bounded("media type", media_type, 127),
            len(content), hashlib.sha256(content).hexdigest(), bytes(content), _member(UploadPurpose, purpose), now,
        )  # fmt: skip
        row = {
            "id": upload.id, "session_id": session_id, "filename": upload.filename, "media_type": upload.media_type,
            "size": upload.size, "sha256": upload.sha256, "content": upload.content,
            "purpose": upload.purpose.value, "created_at": now,
        }  # fmt: skip
        with self._writer.begin() as conn:
            self._touch(conn, session_id, updated_at=now)
            conn.execute(insert(CHAT_UPLOAD).values(row))
        return upload

    def get_upload(self, upload_id: str, with_content: bool = True) -> ChatUpload | None:
        """The upload, or None; `with_content=False` leaves its bytes in the database (None)."""
        columns = list(CHAT_UPLOAD.c) if with_content else _UPLOAD_LISTED
        with self._engine.connect() as conn:
            row = conn.execute(select(*columns).where(CHAT_UPLOAD.c.id == upload_id)).first()
        return None if row is None else _upload(row)

    def uploads(self, session_id: str) -> list[ChatUpload]:
        """The session's uploads, the oldest first, without their bytes (`content` is None)."""
        query = select(*_UPLOAD_LISTED).where(CHAT_UPLOAD.c.session_id == session_id)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(CHAT_UPLOAD.c.created_at, CHAT_UPLOAD.c.id)).all()
        return [_upload(row) for row in rows]

    # ------------------------------------------------------------------ helpers

    @staticmethod
    def _touch(conn: Connection, session_id: str, **values: Any) -> None:
        """Update the session row (its `updated_at`, ...), refusing an unknown session: the same
        row lock as `add_message` takes, so a deleted session is never written to."""
        values.setdefault("updated_at", time.time())
        found = conn.execute(update(CHAT_SESSION).where(CHAT_SESSION.c.id == session_id).values(values)).rowcount
        if not found:
            raise _unknown_session(session_id)


_E = TypeVar("_E", bound=StrEnum)


def _member(enum: type[_E], value: str) -> _E:
    """`value` as a member of `enum`, or a ValueError naming the ones there are."""
    try:
        return enum(value)
    except ValueError:
        raise ValueError(f"unknown {enum.__name__} '{value}': use one of {', '.join(enum)}") from None


def _bounded(what: str, value: str, limit: int) -> str:
    """Refuse a text longer than its column on both backends (SQLite would keep it whole)."""
    if len(value) > limit:
        raise ValueError(f"a chat {what} has at most {limit} characters, not {len(value)}")
    return value


def _unknown_session(session_id: str) -> NotFoundError:
    return NotFoundError(
        f"no chat session '{session_id}' in this database",
        hint="it may have been deleted; list the sessions to see the ids there are, or start a new one",
    )


def _session(row: Any) -> ChatSession:
    return ChatSession(
        row.id, row.title, row.graph_id, float(row.created_at), float(row.updated_at), int(row.last_seq),
        int(row.memory_seq),
    )  # fmt: skip


def _message(row: Any) -> ChatMessage:
    return ChatMessage(
        row.id, row.session_id, int(row.seq), ChatRole(row.role), MessageKind(row.kind), dict(row.content_json),
        row.draft_id, row.run_id, float(row.created_at),
    )  # fmt: skip


def _message_row(message: ChatMessage) -> dict[str, Any]:
    return {
        "id": message.id, "session_id": message.session_id, "seq": message.seq, "role": message.role.value,
        "kind": message.kind.value, "content_json": message.content, "draft_id": message.draft_id,
        "run_id": message.run_id, "created_at": message.created_at,
    }  # fmt: skip


def _draft_row(draft: ChatDraft) -> dict[str, Any]:
    return {
        "id": draft.id, "session_id": draft.session_id, "base_graph_id": draft.base_graph_id,
        "base_version": draft.base_version, "document_json": draft.document, "operations_json": draft.operations,
        "diagnostics_json": draft.diagnostics, "status": draft.status.value,
        "designer_runs_json": draft.designer_runs, "result_graph_id": None, "result_version": None,
        "created_at": draft.created_at, "decided_at": None,
    }  # fmt: skip


def _draft(row: Any) -> ChatDraft:
    decided_at = None if row.decided_at is None else float(row.decided_at)
    return ChatDraft(
        row.id, row.session_id, row.base_graph_id, row.base_version, dict(row.document_json),
        list(row.operations_json), list(row.diagnostics_json), DraftStatus(row.status),
        list(row.designer_runs_json), row.result_graph_id, row.result_version, float(row.created_at), decided_at,
    )  # fmt: skip


def _upload(row: Any) -> ChatUpload:
    content = row._mapping.get("content")
    return ChatUpload(
        row.id, row.session_id, row.filename, row.media_type, int(row.size), row.sha256,
        None if content is None else bytes(content), UploadPurpose(row.purpose), float(row.created_at),
    )  # fmt: skip
