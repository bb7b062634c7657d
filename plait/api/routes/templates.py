"""/api/templates: prompt-script templates (as `plait templates` does) and their live preview.

`POST /api/templates/preview` streams Server-Sent Events: each console entry as it happens
(`log`, `warning`, `error`), then one `result` (the prompt) or `error` (kind, message, line,
column). The script runs with the preview's limits (3 s soft, 5 s hard).

`POST /api/templates/generate` runs the script with the generation's limits (5 s / 8 s), sends
the prompt to the model and streams the answer (`plait.runs.generate` names its events and the
layers of its errors).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from sse_starlette.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from plait.api.errors import ApiError
from plait.api.script_slots import Place
from plait.api.state import ServerState, get_state
from plait.api.template_schemas import GenerateIn, LastUsedOut, PreviewIn, TemplateChange, TemplateIn, TemplateOut
from plait.runs import template_edits
from plait.runs.generate import GenerateRequest, generate
from plait.runs.templates import InputHost, node_host, preview
from plait.sandbox.scripts import ScriptEvent
from plait.store.templates import TemplateRecord

router = APIRouter(prefix="/templates", tags=["templates"])
State = Annotated[ServerState, Depends(get_state)]


def _out(record: TemplateRecord, *, code: bool) -> TemplateOut:
    data = record.as_json()
    if not code:
        data["script_code"] = None
    return TemplateOut(**data)


@router.get("", response_model=list[TemplateOut])
def list_templates(state: State, category: Annotated[str | None, Query(max_length=64)] = None) -> list[TemplateOut]:
    """The templates by category, then name (without their scripts)."""
    return [_out(t, code=False) for t in state.store.templates.list(category=category)]


@router.get("/last-used", response_model=LastUsedOut)
def last_used(state: State, category: Annotated[str, Query(min_length=1, max_length=64)]) -> LastUsedOut:
    """The template last used in `category` (null: none yet)."""
    return LastUsedOut(category=category, template_id=state.store.templates.last_used(category))


@router.post("/preview", response_class=EventSourceResponse, responses={200: {"content": {"text/event-stream": {}}}})
async def preview_template(state: State, body: PreviewIn) -> Response:
    """Run a template (or `script_code`) once and stream its console, then its prompt or its
    error. 503 `sandbox_busy` when every preview place is taken."""
    code, _ = await run_in_threadpool(_code_of, state, body)
    host = await run_in_threadpool(_host_of, state, body)
    place = state.script_slots.take("preview", body.session)  # refused here (503) before the stream starts
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

    def on_event(event: ScriptEvent) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (event.type, event.as_json()))

    async def run() -> None:
        try:
            await run_in_threadpool(preview, code, host, on_event=on_event, cancel=place.cancel)
        finally:
            place.release()
            loop.call_soon_threadsafe(queue.put_nowait, None)

    return EventSourceResponse(_events(queue, asyncio.create_task(run()), place))


@router.post("/generate", response_class=EventSourceResponse, responses={200: {"content": {"text/event-stream": {}}}})
async def generate_template(state: State, body: GenerateIn) -> Response:
    """Run a template (or `script_code`), send its prompt to the model and stream the answer:
    console events, `prompt`, each `delta` of the answer, then `done` or `failed` (with the
    `layer` that failed and the text received so far). 503 `sandbox_busy` when every generation
    place is taken; closing the stream stops the model call."""
    code, schema_target = await run_in_threadpool(_code_of, state, body)
    host = await run_in_threadpool(_host_of, state, body)
    place = state.script_slots.take("generate", body.session)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()
    target = body.schema_target or schema_target
    request = GenerateRequest(code, host, role=body.role, model=body.model, schema_target=target,
                              max_tokens=body.max_tokens)  # fmt: skip

    async def run() -> None:
        try:
            await generate(request, state.provider, lambda kind, data: queue.put_nowait((kind, data)))
        finally:
            place.release()
            queue.put_nowait(None)

    task = asyncio.create_task(run())
    place.on_stop = lambda: _soon(loop, task.cancel)  # a newer generation of the session, or the client gone
    return EventSourceResponse(_events(queue, task, place))


def _soon(loop: asyncio.AbstractEventLoop, call: Callable[[], Any]) -> None:
    loop.call_soon_threadsafe(call)


async def _events(
    queue: asyncio.Queue[tuple[str, dict[str, Any]] | None], task: asyncio.Task[None], place: Place
) -> AsyncIterator[dict[str, Any]]:
    """The queued events as SSE; a client gone stops the script (and a generation's model call)."""
    try:
        while (item := await queue.get()) is not None:
            yield {"event": item[0], "data": json.dumps(item[1], ensure_ascii=False)}
    finally:
        place.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)


@router.get("/{template_id}", response_model=TemplateOut)
def get_template(state: State, template_id: str) -> TemplateOut:
    """One template with its script; 404 for an unknown or deleted one."""
    return _out(state.store.templates.get(template_id), code=True)


@router.post("", response_model=TemplateOut, status_code=201)
def create_template(state: State, body: TemplateIn) -> TemplateOut:
    """A new user template; 409 when the id is taken, 422 for a script that does not parse."""
    created = template_edits.create_template(
        state.store,
        body.id,
        body.script_code,
        base=body.from_template,
        name=body.name,
        category=body.category,
        description=body.description,
        schema_target=body.schema_target,
        what="script_code",
    )
    return _out(created, code=True)


@router.put("/{template_id}", response_model=TemplateOut)
def update_template(state: State, template_id: str, body: TemplateChange) -> TemplateOut:
    """Change a user template; 409 for a system template (copy it with `from` instead)."""
    fields = body.model_dump()
    script = fields.pop("script_code")
    return _out(template_edits.update_template(state.store, template_id, script=script, what="script_code", **fields),
                code=True)  # fmt: skip


@router.delete("/{template_id}", response_model=TemplateOut)
def delete_template(state: State, template_id: str) -> TemplateOut:
    """Delete a user template (softly: runs that named it keep reading it)."""
    return _out(state.store.templates.delete(template_id), code=True)


def _code_of(state: ServerState, body: PreviewIn) -> tuple[str, str | None]:
    """The script to run, and its template's `schema_target`."""
    if (body.template_id is None) == (body.script_code is None):
        raise ApiError(422, "invalid", "give template_id or script_code (one of them)")
    if body.script_code is not None:
        return body.script_code, None
    assert body.template_id is not None
    found = state.store.templates.get(body.template_id)
    state.store.templates.used(found.id)
    return found.script_code, found.schema_target


def _host_of(state: ServerState, body: PreviewIn) -> Any:
    if (body.run_id is None) != (body.node_id is None):
        raise ApiError(422, "invalid", "run_id and node_id go together: the node of the run whose view the script gets")
    if body.run_id is not None and body.node_id is not None:
        return node_host(state.store, body.run_id, body.node_id, state.routes)
    return InputHost(body.input, state.routes)
