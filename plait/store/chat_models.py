"""The tables of chats that design graphs, on the store's one `METADATA` (`models.py` imports
this module): sessions, their messages numbered without gaps, the drafts proposed in them, and
the files a person uploaded into them."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    UniqueConstraint,
    text,
)

from plait.store.models import METADATA, Id, Json, _optional, _required

CHAT_SESSION = Table(
    "chat_session",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("title", String(200)),
    _optional("graph_id", Id),
    _required("created_at", Double),
    _required("updated_at", Double),
    # The seq of the session's newest message: the next one takes last_seq + 1, in the same
    # transaction that raises it, so two writers never take the same number.
    _required("last_seq", Integer, server_default=text("0")),
    # The newest message whose facts the chat's memory has taken.
    _required("memory_seq", Integer, server_default=text("0")),
    Index("idx_chat_session_updated", "updated_at"),
)
"""A chat that designs a graph with a person (`chat.py`); `graph_id` is the stored graph it
works on, None until there is one."""

CHAT_MESSAGE = Table(
    "chat_message",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("session_id", Id, ForeignKey("chat_session.id", ondelete="CASCADE")),
    _required("seq", Integer),
    # user | assistant | system
    _required("role", String(16)),
    # text | draft | questions | answers | run | error
    _required("kind", String(16)),
    _required("content_json", Json),
    _optional("draft_id", Id),
    _optional("run_id", Id),
    _required("created_at", Double),
    # Its leading column serves "the messages of this session" too.
    UniqueConstraint("session_id", "seq", name="uq_chat_message_seq"),
)
"""One message of a chat, numbered 1, 2, ... in its session without gaps: a stream of the
session resumes after the last seq its reader saw."""

CHAT_DRAFT = Table(
    "chat_draft",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("session_id", Id, ForeignKey("chat_session.id", ondelete="CASCADE")),
    _optional("base_graph_id", Id),
    _optional("base_version", Integer),
    _required("document_json", Json),
    _required("operations_json", Json),
    _required("diagnostics_json", Json),
    # proposed | invalid | questions | accepted | rejected
    _required("status", String(16)),
    _required("designer_runs_json", Json),
    _optional("result_graph_id", Id),
    _optional("result_version", Integer),
    _required("created_at", Double),
    _optional("decided_at", Double),
    Index("idx_chat_draft_session", "session_id"),
)
"""A graph proposed in a chat: the document as patched by `operations` onto the base version,
its diagnostics, and the runs of the designer that wrote it. Accepting it stores a version
(`result_graph_id`, `result_version`); a draft is kept after it is decided, as the chat's record."""

CHAT_UPLOAD = Table(
    "chat_upload",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("session_id", Id, ForeignKey("chat_session.id", ondelete="CASCADE")),
    _required("filename", String(255)),
    _required("media_type", String(127)),
    _required("size", Integer),
    _required("sha256", String(64)),
    _required("content", LargeBinary),
    # run_input | knowledge
    _required("purpose", String(16)),
    _required("created_at", Double),
    Index("idx_chat_upload_session", "session_id"),
)
"""A file a person gave a chat, kept whole in the database (so it goes wherever the store goes):
an input for a run, or knowledge for the designer."""
