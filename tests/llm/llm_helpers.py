"""Shared by the provider tests."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import httpx
import pytest

from plait.llm import local
from plait.llm.embedded import SMOLLM2
from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse

needs_local = pytest.mark.skipif(
    not local.available(), reason="the `local` extra is not installed: " + local.INSTALL_HINT
)
"""For tests of the embedded model or llama.cpp's server: skipped only where the extra is missing."""

LABEL = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["bug", "praise", "question"]}},
    "required": ["label"],
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve_llama(*extra_args: str, start_timeout_s: float = 60) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`) on the SmolLM2 GGUF (the
    test extra installs it: the smallest model with a ChatML template, which llama.cpp's
    function-calling format speaks; these tests are about the protocol, not the answers), on a
    free loopback port; yields its base URL (`.../v1`) once it answers, stops it afterwards.
    `extra_args` go to the server (e.g. `--chat_format chatml-function-calling`). Its log goes to a
    temporary file, not a pipe: a pipe nobody reads fills up and stalls the server; the log's tail
    is in the error when the server does not start within `start_timeout_s`."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", SMOLLM2.locate(), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", "2048", *extra_args]  # fmt: skip
    base_url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + start_timeout_s
            while True:
                try:
                    if httpx.get(f"{base_url}/models", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"llama_cpp.server did not start: {log.read().decode(errors='replace')[-2000:]}")
                time.sleep(0.2)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def complete_once(provider: Provider, request: ChatRequest) -> ChatResponse:
    """One request on a fresh event loop; the provider is closed afterwards."""

    async def go() -> ChatResponse:
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    return asyncio.run(go())
