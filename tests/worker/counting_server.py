"""An OpenAI-compatible server on loopback that counts what it is sent: the most requests it
was answering at once, and when each arrived (to check a limit held across processes)."""

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


@dataclass
class Counts:
    in_flight: int = 0
    most: int = 0
    arrivals: list[float] = field(default_factory=list)


def make_app(counts: Counts, latency_s: float) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def complete() -> JSONResponse:
        counts.arrivals.append(time.time())
        counts.in_flight += 1
        counts.most = max(counts.most, counts.in_flight)
        try:
            await asyncio.sleep(latency_s)
        finally:
            counts.in_flight -= 1
        answer = {"id": "c", "object": "chat.completion", "created": int(time.time()), "model": "m",
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}  # fmt: skip
        return JSONResponse(answer)

    return app


@contextmanager
def counting_server(latency_s: float = 0.3) -> Iterator[tuple[str, Counts]]:
    counts = Counts()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(make_app(counts, latency_s), host="127.0.0.1", port=port,
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
