"""GET /api/runs/{id}/events: a run's events as Server-Sent Events.

Each message has `id` (per run: 1, 2, 3...), `event` (the kind: execution.started, node:start,
node:complete, node:error, node:skipped, node:stale, run:paused, run:cancelled,
workflow:complete, workflow:error) and `data` (JSON: id, event, run_id, node_id, at, data).
A client that reconnects with `Last-Event-ID` gets exactly the events after that id. The
stream ends after the run's final event; asked again for a run that has ended, with nothing
newer to send, the answer is 204 (which tells a browser's EventSource to stop reconnecting).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from sse_starlette.sse import EventSourceResponse

from plait.api.auth import CallerDep, token_watch
from plait.api.events import ENDING_KINDS, EventLog, RunEvent
from plait.api.history import history
from plait.api.sse import PING_S, LastEventId, parse_last_event_id
from plait.api.state import ServerState, get_state
from plait.model.enums import TERMINAL_RUN_STATUSES

router = APIRouter(tags=["events"])
State = Annotated[ServerState, Depends(get_state)]
_WAKE = RunEvent(0, "stream:wake", "", None, 0.0, {})
"""Put on a stream's queue to make it look at `revoked` now (never sent)."""


@router.get(
    "/runs/{run_id}/events",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}}, 204: {"description": "The run has ended; nothing newer."}},
)
async def run_events(
    state: State,
    request: Request,
    run_id: str,
    who: CallerDep,
    last_event_id: LastEventId = None,
) -> Response:
    """The run's events as Server-Sent Events: every event after `Last-Event-ID`, then live ones
    until the run ends. 204 when the run has ended and nothing newer is kept."""
    after = parse_last_event_id(last_event_id)
    record = await asyncio.to_thread(state.store.runs.get, run_id)
    log = state.events
    if not log.has(run_id):
        log.open(run_id, await asyncio.to_thread(history, state.store, run_id))
    backlog, queue = log.listen(run_id, after)
    ended = record.status in TERMINAL_RUN_STATUSES and not state.executor.driving(run_id)
    if ended and not backlog:
        log.forget(run_id, queue)
        return Response(status_code=204)
    revoked = asyncio.Event()

    def on_revoked() -> None:
        revoked.set()
        queue.put_nowait(_WAKE)  # the stream may be waiting for the next event

    unwatch = token_watch(request).watch(who.token_id, on_revoked) if who.token_id else None
    stream = _stream(log, run_id, backlog, queue, request, ended=ended, revoked=revoked, unwatch=unwatch)
    return EventSourceResponse(stream, ping=PING_S)


async def _stream(
    log: EventLog,
    run_id: str,
    backlog: list[RunEvent],
    queue: asyncio.Queue[RunEvent],
    request: Request,
    *,
    ended: bool,
    revoked: asyncio.Event,
    unwatch: Callable[[], None] | None,
) -> AsyncIterator[dict[str, str]]:
    """The backlog, then live events until the run's final event (a run that had ended when
    the client connected: the backlog only), or until the caller's token is revoked."""
    sent = 0
    try:
        for event in backlog:
            if revoked.is_set():
                return
            yield event.sse()
            sent = max(sent, event.id) if event.numbered else sent
        if ended or (backlog and backlog[-1].kind in ENDING_KINDS):
            return
        while not revoked.is_set() and not await request.is_disconnected():
            try:
                event = await asyncio.wait_for(queue.get(), timeout=PING_S)
            except TimeoutError:
                continue
            if revoked.is_set():
                return
            if event.numbered and event.id <= sent:
                continue  # queued while the backlog was being sent
            yield event.sse()
            sent = event.id if event.numbered else sent
            if event.kind in ENDING_KINDS:
                return
    finally:
        log.forget(run_id, queue)
        if unwatch is not None:
            unwatch()
