"""GET /api/runs/{id}/events: a run's events as Server-Sent Events (SPEC §10).

Each message has `id` (per run: 1, 2, 3...), `event` (the kind: execution.started, node:start,
node:complete, node:error, node:skipped, node:stale, run:paused, run:cancelled,
workflow:complete, workflow:error) and `data` (JSON: id, event, run_id, node_id, at, data).
A client that reconnects with `Last-Event-ID` gets exactly the events after that id. The
stream ends after the run's final event; asked again for a run that has ended, with nothing
newer to send, the answer is 204 (which tells a browser's EventSource to stop reconnecting).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request, Response
from sse_starlette.sse import EventSourceResponse

from plait.api.errors import ApiError
from plait.api.events import ENDING_KINDS, EventLog, RunEvent
from plait.api.history import history
from plait.api.state import ServerState, get_state
from plait.store.records import TERMINAL_RUN_STATUSES

router = APIRouter(tags=["events"])
State = Annotated[ServerState, Depends(get_state)]
PING_S = 15


@router.get(
    "/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}, 204: {"description": "The run has ended; nothing newer."}},
)
async def run_events(
    state: State,
    request: Request,
    run_id: str,
    last_event_id: Annotated[str | None, Header(description="Resume after this event id.")] = None,
) -> Response:
    after = _parse_id(last_event_id)
    record = await asyncio.to_thread(state.store.runs.get, run_id)
    log = state.events
    if not log.has(run_id):
        log.open(run_id, await asyncio.to_thread(history, state.store, run_id))
    backlog, queue = log.listen(run_id, after)
    ended = record.status in TERMINAL_RUN_STATUSES and not state.executor.driving(run_id)
    if ended and not backlog:
        log.forget(run_id, queue)
        return Response(status_code=204)
    return EventSourceResponse(_stream(log, run_id, backlog, queue, request, ended=ended), ping=PING_S)


async def _stream(
    log: EventLog,
    run_id: str,
    backlog: list[RunEvent],
    queue: asyncio.Queue[RunEvent],
    request: Request,
    *,
    ended: bool,
) -> AsyncIterator[dict[str, str]]:
    """The backlog, then live events until the run's final event (a run that had ended when
    the client connected: the backlog only)."""
    sent = 0
    try:
        for event in backlog:
            yield event.sse()
            sent = max(sent, event.id)
        if ended or (backlog and backlog[-1].kind in ENDING_KINDS):
            return
        while not await request.is_disconnected():
            try:
                event = await asyncio.wait_for(queue.get(), timeout=PING_S)
            except TimeoutError:
                continue
            if event.id <= sent:
                continue  # queued while the backlog was being sent
            yield event.sse()
            sent = event.id
            if event.kind in ENDING_KINDS:
                return
    finally:
        log.forget(run_id, queue)


def _parse_id(value: str | None) -> int:
    if value is None or value.strip() == "":
        return 0
    if not value.strip().isdigit():
        raise ApiError(
            422,
            "invalid_request",
            f"Last-Event-ID must be an event id this stream sent (a number), not {value!r}",
            hint="omit it to receive the run's events from the start",
        )
    return int(value.strip())
