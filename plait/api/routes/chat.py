"""/api/chat: a conversation that designs graphs, proposes them as drafts and runs them.

A message (or the answers to a question card) is taken at once (202) and carried out in the
background: the designer's rounds, each a run of the `plait.designer` system graph. What it
leaves arrives as messages on `GET /api/chat/sessions/{id}/events` (numbered: reconnect with
`Last-Event-ID` for those after it) and in `GET .../messages`. A draft changes no stored graph
until it is accepted; a run started from the chat is an ordinary run, whose events, streamed
answers included, are passed on to the session's stream while it runs.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field
from sse_starlette.sse import EventSourceResponse

from plait.api.chat import ChatHub
from plait.api.errors import ApiError
from plait.api.schemas import CheckedIn
from plait.api.sse import PING_S, parse_last_event_id
from plait.api.state import ServerState, get_state
from plait.compile.document_diff import diff_documents
from plait.store.chat import ChatDraft, ChatMessage, ChatSession, UploadPurpose

router = APIRouter(prefix="/chat", tags=["chat"])
State = Annotated[ServerState, Depends(get_state)]


class SessionIn(CheckedIn):
    title: str | None = Field(default=None, max_length=200)
    graph: str | None = Field(default=None, max_length=128, description="A stored graph (id or slug) to work on.")


class SessionOut(BaseModel):
    id: str
    title: str
    graph_id: str | None
    created_at: float
    updated_at: float


class MessageIn(CheckedIn):
    text: str = Field(min_length=1, max_length=8000)


class AnswersIn(CheckedIn):
    answers: dict[str, str | list[str]] = Field(description="Question id -> the answer (a list for `multiple`).")


class MessageOut(BaseModel):
    seq: int
    role: str
    kind: str
    content: dict[str, Any]
    draft_id: str | None
    run_id: str | None
    created_at: float


class TakenOut(BaseModel):
    """The turn is being carried out; its messages follow on the session's event stream."""

    session_id: str
    seq: int = Field(description="The number of the message just stored; the turn's answers come after it.")


class ChatDraftOut(BaseModel):
    id: str
    status: str
    base_graph_id: str | None
    base_version: int | None
    graph: dict[str, Any]
    diff: dict[str, Any]
    errors: list[dict[str, Any]]
    designer_runs: list[str]
    result_graph_id: str | None
    result_version: int | None


class AcceptIn(CheckedIn):
    fork: bool = Field(default=False, description="Store it as a fork of its graph instead of a new version.")


class RunIn(CheckedIn):
    input: dict[str, Any] = Field(default_factory=dict)
    graph: str | None = Field(default=None, max_length=128, description="Default: the chat's graph.")
    upload: str | None = Field(default=None, max_length=36, description="An upload whose text goes into `input`.")
    upload_field: str = Field(default="text", max_length=128, description="The input field the upload's text fills.")


class RunStartedOut(BaseModel):
    run_id: str
    seq: int


class UploadOut(BaseModel):
    id: str
    filename: str
    media_type: str
    size: int
    sha256: str
    purpose: str


def _hub(state: ServerState) -> ChatHub:
    if state.chat is None:  # set by the lifespan before any request is served
        raise ApiError(503, "unavailable", "the chat is not running on this server", hint="restart the server")
    return state.chat


def _session(session: ChatSession) -> SessionOut:
    return SessionOut(
        id=session.id,
        title=session.title,
        graph_id=session.graph_id,
        created_at=session.created_at,
        updated_at=session.updated_at,
    )


def _message(message: ChatMessage) -> MessageOut:
    return MessageOut(
        seq=message.seq,
        role=str(message.role),
        kind=str(message.kind),
        content=message.content,
        draft_id=message.draft_id,
        run_id=message.run_id,
        created_at=message.created_at,
    )


@router.post("/sessions", response_model=SessionOut, status_code=201)
async def open_session(state: State, body: SessionIn | None = None) -> SessionOut:
    """Start a conversation, on a stored graph when `graph` names one (404 when it does not exist)."""
    body = body or SessionIn()
    return _session(await run_in_threadpool(_hub(state).chat.open, body.title, body.graph))


@router.get("/sessions", response_model=list[SessionOut])
def list_sessions(state: State, limit: Annotated[int, Query(ge=1, le=500)] = 100) -> list[SessionOut]:
    """The conversations, the most recently active first."""
    return [_session(s) for s in state.store.chat.list_sessions(limit)]


@router.get("/sessions/{session_id}", response_model=SessionOut)
def get_session(state: State, session_id: str) -> SessionOut:
    return _session(_hub(state).chat.session(session_id))


@router.delete("/sessions/{session_id}", status_code=204, response_class=Response)
def delete_session(state: State, session_id: str) -> Response:
    """Forget a conversation, its messages, drafts and uploads (stored graphs and runs stay)."""
    _hub(state).chat.session(session_id)
    state.store.chat.delete_session(session_id)
    return Response(status_code=204)


@router.get("/sessions/{session_id}/messages", response_model=list[MessageOut])
def messages(state: State, session_id: str, after: Annotated[int, Query(ge=0, le=2**31)] = 0) -> list[MessageOut]:
    """The messages numbered after `after`, in order."""
    _hub(state).chat.session(session_id)
    return [_message(m) for m in state.store.chat.messages(session_id, after_seq=after)]


@router.post("/sessions/{session_id}/messages", response_model=TakenOut, status_code=202)
async def send(state: State, session_id: str, body: MessageIn) -> TakenOut:
    """Take a message and design from it in the background (409 while the last one is worked on)."""
    hub = _hub(state)
    turn = await hub.begin(session_id, functools.partial(hub.chat.take_message, session_id, body.text))
    return TakenOut(session_id=session_id, seq=turn.first_seq)


@router.post("/sessions/{session_id}/answers", response_model=TakenOut, status_code=202)
async def answer(state: State, session_id: str, body: AnswersIn) -> TakenOut:
    """Answer the open question card; the design goes on from the answers (409 when none waits)."""
    hub = _hub(state)
    turn = await hub.begin(session_id, functools.partial(hub.chat.take_answers, session_id, body.answers))
    return TakenOut(session_id=session_id, seq=turn.first_seq)


def _draft(state: ServerState, draft: ChatDraft) -> ChatDraftOut:
    base = _hub(state).chat.base_document(draft)
    return ChatDraftOut(
        id=draft.id,
        status=str(draft.status),
        base_graph_id=draft.base_graph_id,
        base_version=draft.base_version,
        graph=draft.document,
        diff=diff_documents(base, draft.document).to_json(),
        errors=draft.diagnostics,
        designer_runs=draft.designer_runs,
        result_graph_id=draft.result_graph_id,
        result_version=draft.result_version,
    )


@router.get("/sessions/{session_id}/drafts/{draft_id}", response_model=ChatDraftOut)
def get_draft(state: State, session_id: str, draft_id: str) -> ChatDraftOut:
    """A draft: the graph it proposes, its diff against the graph it started from, what is wrong."""
    return _draft(state, _hub(state).chat.draft(session_id, draft_id))


@router.post("/sessions/{session_id}/drafts/{draft_id}/accept", response_model=MessageOut, status_code=201)
def accept(state: State, session_id: str, draft_id: str, body: AcceptIn | None = None) -> MessageOut:
    """Store a valid draft as a new version of its graph, a fork, or a new graph (409 when the
    draft is not a valid proposal, or the graph changed since the draft was made)."""
    return _message(_hub(state).chat.accept(session_id, draft_id, fork=(body or AcceptIn()).fork))


@router.post("/sessions/{session_id}/drafts/{draft_id}/reject", response_model=MessageOut)
def reject(state: State, session_id: str, draft_id: str) -> MessageOut:
    """Drop a draft; the stored graph is left exactly as it was (409 when it was decided already)."""
    return _message(_hub(state).chat.reject(session_id, draft_id))


@router.post("/sessions/{session_id}/runs", response_model=RunStartedOut, status_code=202)
async def run(state: State, session_id: str, body: RunIn) -> RunStartedOut:
    """Start an ordinary run of the chat's graph (or `graph`), linked into the chat; its events
    stream to the session, and a message says how it ended."""
    hub = _hub(state)
    run_input = dict(body.input)
    if body.upload is not None:
        run_input[body.upload_field] = await run_in_threadpool(hub.chat.upload_text, session_id, body.upload)
    started = await run_in_threadpool(hub.chat.start, session_id, run_input, body.graph)
    assert started.run_id is not None
    hub.follow(session_id, hub.chat.follow(session_id, started.run_id))
    return RunStartedOut(run_id=started.run_id, seq=started.seq)


@router.post("/sessions/{session_id}/uploads", response_model=UploadOut, status_code=201)
async def upload(
    state: State,
    session_id: str,
    request: Request,
    filename: Annotated[str, Query(min_length=1, max_length=255)],
    purpose: Annotated[UploadPurpose, Query()] = UploadPurpose.RUN_INPUT,
    content_type: Annotated[str | None, Header()] = None,
) -> UploadOut:
    """Keep a file in the chat (the request body, at most 10 MiB): input for a run, or for a
    knowledge base."""
    body = await request.body()
    media_type = (content_type or "application/octet-stream").split(";", 1)[0].strip()[:127]
    keep = _hub(state).chat.keep_upload
    kept = await run_in_threadpool(keep, session_id, filename, body, media_type, str(purpose))
    return UploadOut(
        id=kept.id,
        filename=kept.filename,
        media_type=kept.media_type,
        size=kept.size,
        sha256=kept.sha256,
        purpose=str(kept.purpose),
    )


@router.get(
    "/sessions/{session_id}/events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def events(
    state: State,
    request: Request,
    session_id: str,
    last_event_id: Annotated[str | None, Header(description="Resume after this message number.")] = None,
) -> Response:
    """The conversation as Server-Sent Events: every message numbered after `Last-Event-ID`
    (`event: message`, `id` its number), then live ones, with the designer's progress
    (`event: progress`) and the events of the runs the chat follows (`event: run`), unnumbered."""
    after = parse_last_event_id(last_event_id)
    hub = _hub(state)
    await run_in_threadpool(hub.chat.session, session_id)
    queue = hub.listen(session_id)
    return EventSourceResponse(_stream(state, hub, session_id, after, queue, request), ping=PING_S)


async def _stream(
    state: ServerState,
    hub: ChatHub,
    session_id: str,
    after: int,
    queue: asyncio.Queue[dict[str, Any]],
    request: Request,
) -> AsyncIterator[dict[str, str]]:
    sent = after
    try:
        for message in await run_in_threadpool(state.store.chat.messages, session_id, sent):
            yield _sse(message)
            sent = message.seq
        while not await request.is_disconnected():
            try:
                event = await asyncio.wait_for(queue.get(), timeout=PING_S)
            except TimeoutError:
                continue
            if event["event"] == "message":
                for message in await run_in_threadpool(state.store.chat.messages, session_id, sent):
                    yield _sse(message)
                    sent = message.seq
            elif event["event"] == "run_event":
                yield {"event": "run", "data": json.dumps(event["data"], default=str)}
            else:
                yield {"event": "progress", "data": json.dumps(event, default=str)}
    finally:
        hub.forget(session_id, queue)


def _sse(message: ChatMessage) -> dict[str, str]:
    return {"id": str(message.seq), "event": "message", "data": _message(message).model_dump_json()}
