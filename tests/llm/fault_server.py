"""An OpenAI-compatible server of our own, on loopback, that misbehaves on request (the fault matrix).

The requested `model` picks the behaviour, `NAME` or `NAME*N` (misbehave N times for that model,
then answer normally):

- `ok`: a valid answer for the label schema (`{"label": "bug"}`);
- `429`: HTTP 429 with `Retry-After: 1`; `500`: HTTP 500;
- `slow`: answers after 3 s (clients with a shorter timeout give up);
- `notjson`: an answer that is not JSON; `badschema`: JSON that breaks the label schema;
- `truncate`: with `stream: true`, a stream that stops in the middle of the answer;
- `length`: an answer the model stopped at the token limit (`finish_reason: length`), cut short;
- `dribble`: with `stream: true`, ten words 0.3 s apart; counts `dribble|finished` when all
  were sent and `dribble|closed` when the client closed the stream before;
- `echo401`: HTTP 401 quoting the API key it was sent (as OpenAI's "Incorrect API key provided");
  `echo500`: HTTP 500 whose message repeats the request's Authorization header;
- `noschema`: HTTP 500 naming `response_format` to the json_schema form (as llama.cpp's server),
  an answer to the others; `objectonly`: HTTP 400 to any form carrying a schema, an answer to
  plain `{type: json_object}`; `noformat`: HTTP 500 naming `response_format` to every form.

Each request also counts under `MODEL|FORM`, FORM being the structured-output form it was sent
(`json_schema`, `json_object_schema`, `json_object` or `none`).

A request with `stream: true` is answered as a server-sent event stream, usage in the last chunk.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

DRIBBLE = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
CONTENT = {
    "ok": '{"label": "bug"}',
    "notjson": "I think it is a bug.",
    "badschema": '{"label": "urgent"}',
    "length": '{"label": "bu',
}


def _answer(model: str, content: str, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


def make_app(calls: Counter[str]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> Response:
        body = await request.json()
        model = str(body.get("model"))
        calls[model] += 1
        behaviour, _, times = model.partition("*")
        if times and calls[model] > int(times):
            behaviour = "ok"
        form = _form(body.get("response_format"))
        calls[f"{model}|{form}"] += 1
        refused = {"noschema": form == "json_schema", "objectonly": form in ("json_schema", "json_object_schema"),
                   "noformat": form != "none"}.get(behaviour, False)  # fmt: skip
        if refused and behaviour == "objectonly":
            return JSONResponse({"error": {"message": "Unrecognized request argument: schema"}}, status_code=400)
        if refused:
            message = f"response_format type {form} is not supported"
            return JSONResponse({"error": {"message": message}}, status_code=500)
        if behaviour == "429":
            return JSONResponse({"error": {"message": "slow down"}}, status_code=429, headers={"Retry-After": "1"})
        if behaviour == "500":
            return JSONResponse({"error": {"message": "boom"}}, status_code=500)
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        if behaviour == "echo401":
            message = f"Incorrect API key provided: {key}. You can find your API key at https://example/keys."
            return JSONResponse({"error": {"message": message, "code": "invalid_api_key"}}, status_code=401)
        if behaviour == "echo500":
            message = f"upstream failed for Authorization: Bearer {key} (key={key})"
            return JSONResponse({"error": {"message": message}}, status_code=500)
        if behaviour == "slow":
            await asyncio.sleep(3)
            behaviour = "ok"
        if behaviour == "dribble" and body.get("stream"):
            return StreamingResponse(_dribble(model, calls), media_type="text/event-stream")
        content = CONTENT.get(behaviour, CONTENT["ok"])
        finish = "length" if behaviour == "length" else "stop"
        if body.get("stream"):
            return StreamingResponse(
                _chunks(model, content, cut=behaviour == "truncate", finish=finish), media_type="text/event-stream"
            )
        return JSONResponse(_answer(model, content, finish))

    return app


def _form(response_format: Any) -> str:
    if not isinstance(response_format, dict):
        return "none"
    if response_format.get("type") == "json_schema":
        return "json_schema"
    return "json_object_schema" if "schema" in response_format else "json_object"


def _event(model: str, choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> str:
    chunk = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "created": int(time.time()),
             "model": model, "choices": choices, "usage": usage}  # fmt: skip
    return f"data: {json.dumps(chunk)}\n\n"


async def _dribble(model: str, calls: Counter[str]) -> AsyncIterator[str]:
    finished = False
    try:
        for word in DRIBBLE:
            yield _event(model, [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}])
            await asyncio.sleep(0.3)
        yield _event(model, [{"index": 0, "delta": {}, "finish_reason": "stop"}])
        yield "data: [DONE]\n\n"
        finished = True
    finally:
        calls["dribble|finished" if finished else "dribble|closed"] += 1


async def _chunks(model: str, content: str, *, cut: bool, finish: str = "stop") -> AsyncIterator[str]:
    def event(choices: list[dict[str, Any]], usage: dict[str, int] | None = None) -> str:
        return _event(model, choices, usage)

    half = len(content) // 2
    yield event([{"index": 0, "delta": {"role": "assistant", "content": content[:half]}, "finish_reason": None}])
    if cut:
        return  # the connection ends mid-answer: no finish_reason, no [DONE]
    yield event([{"index": 0, "delta": {"content": content[half:]}, "finish_reason": None}])
    yield event([{"index": 0, "delta": {}, "finish_reason": finish}])
    yield event([], {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25})
    yield "data: [DONE]\n\n"


@contextmanager
def fault_server() -> Iterator[tuple[str, Counter[str]]]:
    """Serve on a free loopback port in a thread; yields the base URL (…/v1) and the call counts."""
    calls: Counter[str] = Counter()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(make_app(calls), host="127.0.0.1", port=port, log_level="critical", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the fault server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1", calls
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def dropping_server() -> Iterator[str]:
    """A loopback server that reads each request and closes the connection without answering."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1)
                with suppress(OSError):
                    conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
