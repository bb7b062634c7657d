"""An OpenAI-compatible server on loopback that counts what it is sent: the most requests it
was answering at once, when each arrived and its prompt (to check a limit held across
processes, or how many calls were paid, and for which node). With a `gate`, answers wait until
the test sets it (a fault injected while calls are in flight); with a `hold`, the one request
whose prompt it names waits (a process killed while that call is in flight). `answer` makes the
reply a function of the prompt, so that two runs' outputs compare."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

PAID_THEN_SHAPED = {
    "id": "answer_then_shape",
    "nodes": [
        {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "Say something"},
        {"id": "b", "type": "TRANSFORM", "transform_expr": "({said: current})"},
    ],
    "edges": [{"source": "a", "target": "b"}, {"source": "b", "target": "END"}],
}
"""A graph whose first node pays one call to the counting server, and whose second shapes the answer:
a fault between the two must not make the first pay again."""


@dataclass
class Counts:
    in_flight: int = 0
    most: int = 0
    arrivals: list[float] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    """Each request's prompt (the text of its last user message), in the order they arrived."""


@dataclass
class Hold:
    """Keep the first request whose prompt contains `prompt` open until `release` is set;
    `arrived` is set when it comes, for the test to act while the call is in flight."""

    prompt: str
    arrived: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)


def prompt_of(body: dict[str, Any]) -> str:
    """The text of the request's last user message (its text parts, joined)."""
    users = [m.get("content") for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1] if users else ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def make_app(counts: Counts, latency_s: float, gate: threading.Event | None = None, hold: Hold | None = None,
             answer: Callable[[str], str] | None = None) -> FastAPI:  # fmt: skip
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete(request: Request) -> JSONResponse:
        prompt = prompt_of(await request.json())
        counts.arrivals.append(time.time())
        counts.prompts.append(prompt)
        counts.in_flight += 1
        counts.most = max(counts.most, counts.in_flight)
        try:
            await asyncio.sleep(latency_s)
            if gate is not None:
                await asyncio.to_thread(gate.wait, 120)
            if hold is not None and hold.prompt in prompt and not hold.arrived.is_set():
                hold.arrived.set()
                await asyncio.to_thread(hold.release.wait, 120)
        finally:
            counts.in_flight -= 1
        content = "ok" if answer is None else answer(prompt)
        reply = {"id": "c", "object": "chat.completion", "created": int(time.time()), "model": "m",
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                              "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}  # fmt: skip
        return JSONResponse(reply)

    return app


@contextmanager
def counting_server(latency_s: float = 0.3, gate: threading.Event | None = None, hold: Hold | None = None,
                    answer: Callable[[str], str] | None = None) -> Iterator[tuple[str, Counts]]:  # fmt: skip
    counts = Counts()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(make_app(counts, latency_s, gate, hold, answer), host="127.0.0.1",
                                           port=port, log_level="critical", lifespan="off"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1", counts
    finally:
        if hold is not None:  # a request still held (its client killed) lets the server stop
            hold.release.set()
        server.should_exit = True
        thread.join(timeout=10)


def openai_config(url: str, extra: str = "") -> str:
    """A plait.toml whose chat model is served at `url` (a counting server); `extra` is appended."""
    return f'[[providers]]\nid = "fake"\nkind = "openai"\nbase_url = "{url}"\nmodels = [{{name = "m"}}]\n' \
           f'[roles]\nchat = "fake/m"\n{extra}'  # fmt: skip
