"""Chats that design graphs: sessions, messages numbered without gaps (also when several stores
write at once), drafts, uploads, and deleting a session with all it holds. SQLite and PostgreSQL
(the `store` fixture)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from typing import Any

import pytest

from plait.errors import Refusal
from plait.store import NotFoundError, Store
from plait.store.chat import ChatDraft, ChatRole, DraftStatus, MessageKind, UploadPurpose

DOCUMENT = {"name": "Summarise", "nodes": [{"id": "a", "type": "LLM_CALL"}], "edges": []}


def draft(store: Store, session_id: str, status: str = "proposed", **changes: Any) -> ChatDraft:
    fields: dict[str, Any] = {
        "base_graph_id": None, "base_version": None, "document": DOCUMENT,
        "operations": [{"op": "add_node", "id": "a"}], "diagnostics": [], "status": status, "designer_runs": ["r1"],
    }  # fmt: skip
    return store.chat.add_draft(session_id, **(fields | changes))


def test_sessions_round_trip_and_list_the_most_recently_updated_first(store: Store) -> None:
    first = store.chat.create_session("Summariser", graph_id="g-1")
    second = store.chat.create_session("Classifier")
    assert (first.title, first.graph_id, first.last_seq) == ("Summariser", "g-1", 0)
    assert store.chat.get_session(first.id) == first
    assert store.chat.get_session("nope") is None
    assert [s.id for s in store.chat.list_sessions()] == [second.id, first.id]
    store.chat.add_message(first.id, "user", "text", {"text": "hi"})
    assert [s.id for s in store.chat.list_sessions()] == [first.id, second.id]
    assert [s.id for s in store.chat.list_sessions(limit=1)] == [first.id]
    moved = store.chat.set_session_graph(second.id, "g-2")
    assert moved.graph_id == "g-2"
    assert store.chat.get_session(second.id) == moved


def test_messages_are_numbered_one_to_n_and_read_after_a_number(store: Store) -> None:
    session = store.chat.create_session("Designing")
    added = [
        store.chat.add_message(session.id, ChatRole.USER, MessageKind.TEXT, {"text": "make a summariser"}),
        store.chat.add_message(session.id, "assistant", "draft", {"summary": "one node"}, draft_id="d-1"),
        store.chat.add_message(session.id, "system", "run", {"status": "completed"}, run_id="r-1"),
    ]
    assert [m.seq for m in added] == [1, 2, 3]
    assert store.chat.messages(session.id) == added
    read = store.chat.messages(session.id, after_seq=1)
    assert [(m.seq, m.role, m.kind, m.draft_id, m.run_id) for m in read] == [
        (2, ChatRole.ASSISTANT, MessageKind.DRAFT, "d-1", None),
        (3, ChatRole.SYSTEM, MessageKind.RUN, None, "r-1"),
    ]
    assert read[0].content == {"summary": "one node"}
    assert [m.seq for m in store.chat.messages(session.id, after_seq=1, limit=1)] == [2]
    assert store.chat.messages(session.id, after_seq=3) == []
    assert store.chat.get_session(session.id).last_seq == 3  # type: ignore[union-attr]
    # a long conversation is shown by its end: the newest messages, still in order
    assert [m.seq for m in store.chat.latest_messages(session.id, limit=2)] == [2, 3]
    assert store.chat.latest_messages(session.id) == added
    assert store.chat.latest_messages("no-such-session") == []


def test_messages_of_stores_writing_at_once_take_each_number_once(
    store: Store, open_store: Callable[[], Store]
) -> None:
    session = store.chat.create_session("Busy")
    stores = [open_store() for _ in range(8)]
    per_thread = 5
    errors: list[BaseException] = []

    def write(writer: Store, n: int) -> None:
        try:
            for i in range(per_thread):
                writer.chat.add_message(session.id, "user", "text", {"thread": n, "i": i})
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(writer, n)) for n, writer in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    messages = store.chat.messages(session.id)
    assert [m.seq for m in messages] == list(range(1, 8 * per_thread + 1))
    assert sorted((m.content["thread"], m.content["i"]) for m in messages) == [
        (n, i) for n in range(8) for i in range(per_thread)
    ]


def test_an_unknown_session_is_refused_as_not_found(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no chat session 'gone'") as raised:
        store.chat.add_message("gone", "user", "text", {"text": "hi"})
    assert raised.value.kind is Refusal.NOT_FOUND
    assert raised.value.hint
    with pytest.raises(NotFoundError, match="'gone'"):
        draft(store, "gone")
    with pytest.raises(NotFoundError, match="'gone'"):
        store.chat.add_upload("gone", "a.txt", "text/plain", b"x", "knowledge")
    with pytest.raises(NotFoundError, match="'gone'"):
        store.chat.set_session_graph("gone", "g")
    assert store.chat.messages("gone") == []


def test_unknown_values_are_refused(store: Store) -> None:
    session = store.chat.create_session("Checks")
    with pytest.raises(ValueError, match="unknown ChatRole 'robot'"):
        store.chat.add_message(session.id, "robot", "text", {})
    with pytest.raises(ValueError, match="unknown MessageKind 'poem'"):
        store.chat.add_message(session.id, "user", "poem", {})
    with pytest.raises(TypeError, match="JSON object"):
        store.chat.add_message(session.id, "user", "text", ["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown DraftStatus 'maybe'"):
        draft(store, session.id, status="maybe")
    with pytest.raises(ValueError, match="unknown UploadPurpose 'fun'"):
        store.chat.add_upload(session.id, "a.txt", "text/plain", b"x", "fun")
    with pytest.raises(ValueError, match="at most 200"):
        store.chat.create_session("t" * 201)
    assert store.chat.messages(session.id) == []
    assert store.chat.get_session(session.id).last_seq == 0  # type: ignore[union-attr]


def test_drafts_round_trip_and_update(store: Store) -> None:
    session = store.chat.create_session("Drafts")
    added = draft(store, session.id, base_graph_id="g-1", base_version=2, diagnostics=[{"code": "x"}])
    assert added.status is DraftStatus.PROPOSED
    assert store.chat.get_draft(added.id) == added
    assert store.chat.get_draft("nope") is None
    changed = store.chat.update_draft(
        added.id, status="accepted", result_graph_id="g-1", result_version=3, decided_at=123.5,
        designer_runs=["r1", "r2"], document={"name": "v2"}, operations=[], diagnostics=[],
    )  # fmt: skip
    assert (changed.status, changed.result_graph_id, changed.result_version, changed.decided_at) == (
        DraftStatus.ACCEPTED, "g-1", 3, 123.5,
    )  # fmt: skip
    assert (changed.document, changed.operations, changed.diagnostics, changed.designer_runs) == (
        {"name": "v2"}, [], [], ["r1", "r2"],
    )  # fmt: skip
    assert (changed.base_graph_id, changed.base_version, changed.created_at) == ("g-1", 2, added.created_at)
    assert store.chat.get_draft(added.id) == changed
    assert store.chat.update_draft(added.id) == changed
    later = draft(store, session.id)
    assert [d.id for d in store.chat.drafts(session.id)] == [added.id, later.id]


def test_update_draft_refuses_what_it_does_not_change(store: Store) -> None:
    added = draft(store, store.chat.create_session("Drafts").id)
    with pytest.raises(TypeError, match="cannot change created_at, session_id"):
        store.chat.update_draft(added.id, session_id="other", created_at=1.0, status="rejected")
    with pytest.raises(ValueError, match="unknown DraftStatus"):
        store.chat.update_draft(added.id, status="maybe")
    assert store.chat.get_draft(added.id) == added
    with pytest.raises(NotFoundError, match="no chat draft 'nope'"):
        store.chat.update_draft("nope", status="rejected")


def test_the_open_draft_is_the_newest_one_not_decided(store: Store) -> None:
    session = store.chat.create_session("Open")
    assert store.chat.open_draft(session.id) is None
    draft(store, session.id, "invalid")
    questions = draft(store, session.id, "questions")
    draft(store, session.id, "rejected")
    assert store.chat.open_draft(session.id) == questions
    store.chat.update_draft(questions.id, status="accepted")
    opened = store.chat.open_draft(session.id)
    assert opened is not None
    assert opened.status is DraftStatus.INVALID
    other = store.chat.create_session("Other")
    assert store.chat.open_draft(other.id) is None


def test_uploads_are_listed_without_their_bytes(store: Store) -> None:
    session = store.chat.create_session("Files")
    content = bytes(range(256)) * 10
    added = store.chat.add_upload(session.id, "data.bin", "application/octet-stream", content, UploadPurpose.RUN_INPUT)
    notes = store.chat.add_upload(session.id, "notes.md", "text/markdown", "# Über".encode(), "knowledge")
    assert (added.size, added.sha256) == (len(content), hashlib.sha256(content).hexdigest())
    fetched = store.chat.get_upload(added.id)
    assert fetched == added
    assert fetched.content == content  # type: ignore[union-attr]
    assert hashlib.sha256(fetched.content or b"").hexdigest() == fetched.sha256  # type: ignore[union-attr]
    listed = store.chat.uploads(session.id)
    assert [(u.id, u.content, u.purpose) for u in listed] == [
        (added.id, None, UploadPurpose.RUN_INPUT),
        (notes.id, None, UploadPurpose.KNOWLEDGE),
    ]
    assert listed[0].sha256 == added.sha256
    bare = store.chat.get_upload(added.id, with_content=False)
    assert bare is not None
    assert (bare.content, bare.size) == (None, len(content))
    assert store.chat.get_upload("nope") is None


def test_deleting_a_session_deletes_its_messages_drafts_and_uploads(store: Store) -> None:
    session, kept = store.chat.create_session("Going"), store.chat.create_session("Staying")
    for each in (session, kept):
        store.chat.add_message(each.id, "user", "text", {"text": "hi"})
        made = draft(store, each.id)
        store.chat.add_upload(each.id, "a.txt", "text/plain", b"hello", "knowledge")
    gone = store.chat.drafts(session.id)[0]
    upload = store.chat.uploads(session.id)[0]
    assert store.chat.delete_session(session.id) is True
    assert store.chat.delete_session(session.id) is False
    assert store.chat.get_session(session.id) is None
    assert store.chat.messages(session.id) == []
    assert store.chat.drafts(session.id) == []
    assert store.chat.get_draft(gone.id) is None
    assert store.chat.uploads(session.id) == []
    assert store.chat.get_upload(upload.id) is None
    # the other session keeps everything
    assert len(store.chat.messages(kept.id)) == 1
    assert store.chat.drafts(kept.id) == [made]
    assert len(store.chat.uploads(kept.id)) == 1
