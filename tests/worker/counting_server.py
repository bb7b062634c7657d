"""An OpenAI-compatible server on loopback that counts what it is sent: the most requests it
was answering at once, and when each arrived (to check a limit held across processes, or how
many calls were paid). With a `gate`, answers wait until the test sets it (a fault injected
while calls are in flight)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import uvicorn
from fastapi import FastAPI
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


def make_app(counts: Counts, latency_s: float, gate: threading.Event | None = None) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete() -> JSONResponse:
        counts.arrivals.append(time.time())
        counts.in_flight += 1
        counts.most = max(counts.most, counts.in_flight)
        try:
            await asyncio.sleep(latency_s)
            if gate is not None:
                await asyncio.to_thread(gate.wait, 120)
        finally:
            counts.in_flight -= 1
        answer = {"id": "c", "object": "chat.completion", "created": int(time.time()), "model": "m",
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}  # fmt: skip
        return JSONResponse(answer)

    return app


@contextmanager
def counting_server(latency_s: float = 0.3, gate: threading.Event | None = None) -> Iterator[tuple[str, Counts]]:
    counts = Counts()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(make_app(counts, latency_s, gate), host="127.0.0.1", port=port,
                                           log_level="critical", lifespan="off"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/v1", counts
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def openai_config(url: str, extra: str = "") -> str:
    """A plait.toml whose chat model is served at `url` (a counting server); `extra` is appended."""
    return f'[[providers]]\nid = "fake"\nkind = "openai"\nbase_url = "{url}"\nmodels = [{{name = "m"}}]\n' \
           f'[roles]\nchat = "fake/m"\n{extra}'  # fmt: skip
