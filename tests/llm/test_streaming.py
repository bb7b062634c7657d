"""Answers streamed piece by piece to a request's `on_delta`: from a real OpenAI-compatible
server on loopback, from the embedded model, and from the scripted provider. A stream that
breaks once text was passed on is a `stream` error the pool does not retry (the text has been
shown); one that breaks before is retried as before. Cancelling the caller closes the
connection: the server sees the client go."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fault_server import fault_server
from llm_helpers import needs_local

from plait.config import PlaitConfig, ProviderConfig
from plait.llm import local
from plait.llm.openai_compat import OpenAIProvider
from plait.llm.pool import ProviderPool
from plait.llm.scripted import ScriptedProvider, load_script
from plait.llm.types import ChatRequest, ProviderError


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Any]]:
    with fault_server() as served:
        yield served


def streamed(model: str | None = None, **fields: Any) -> tuple[ChatRequest, list[str]]:
    pieces: list[str] = []
    request = ChatRequest(node_id="n", messages=[{"role": "user", "content": "hi"}], model=model,
                          on_delta=pieces.append, **fields)  # fmt: skip
    return request, pieces


def openai(url: str, **fields: Any) -> OpenAIProvider:
    return OpenAIProvider(ProviderConfig(id="srv", kind="openai", base_url=url, timeout_s=5, **fields))


def test_an_openai_answer_arrives_in_pieces_and_whole(server: tuple[str, Any]) -> None:
    url, _ = server
    request, pieces = streamed("ok")

    async def go() -> Any:
        provider = openai(url)
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    response = asyncio.run(go())
    assert len(pieces) == 2  # the server sends the answer in two chunks
    assert "".join(pieces) == response.content == '{"label": "bug"}'
    assert response.usage.input_tokens == 20  # usage from the last chunk


def test_a_stream_broken_after_text_was_shown_is_not_retried_by_the_pool(server: tuple[str, Any]) -> None:
    url, calls = server
    config = PlaitConfig(
        providers=[ProviderConfig(id="srv", kind="openai", base_url=url, timeout_s=5, retries=2, backoff_s=0.01)],
        roles={"chat": ("srv/truncate",)},
    )
    request, pieces = streamed()
    before = calls["truncate"]

    async def go() -> None:
        pool = ProviderPool(config)
        try:
            await pool.complete(request)
        finally:
            await pool.aclose()

    with pytest.raises(ProviderError) as caught:
        asyncio.run(go())
    assert caught.value.kind == "stream"
    assert not caught.value.retryable
    assert calls["truncate"] - before == 1  # asked once: a retry would repeat what was shown
    assert "".join(pieces) == '{"label"'  # the half that arrived


def test_cancelling_a_streamed_call_closes_the_connection(server: tuple[str, Any]) -> None:
    url, calls = server
    request, pieces = streamed("dribble")

    async def go() -> None:
        provider = openai(url)
        task = asyncio.create_task(provider.complete(request))
        while not pieces:
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await provider.aclose()

    asyncio.run(go())
    deadline = time.monotonic() + 5
    while not calls["dribble|closed"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert calls["dribble|closed"] == 1  # the server saw the client leave
    assert calls["dribble|finished"] == 0
    assert len(pieces) < 10


def test_scripted_answers_stream_word_by_word_and_break_where_told(tmp_path: Any) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "responses:\n"
        "  - {match: BREAK, text: 'alpha beta gamma', stream_break_after: 8}\n"
        "  - {match: NONE, text: 'alpha beta', stream_break_after: 0}\n"
        "  - {text: 'alpha beta gamma'}\n"
    )
    provider = ScriptedProvider(load_script(path))

    def ask(prompt: str) -> tuple[list[str], Any]:
        pieces: list[str] = []
        request = ChatRequest(node_id="n", messages=[{"role": "user", "content": prompt}], on_delta=pieces.append)
        try:
            return pieces, asyncio.run(provider.complete(request))
        except ProviderError as exc:
            return pieces, exc

    pieces, answer = ask("whole")
    assert pieces == ["alpha ", "beta ", "gamma"]
    assert answer.content == "alpha beta gamma"
    pieces, error = ask("BREAK")
    assert "".join(pieces) == "alpha be"
    assert (error.kind, error.retryable) == ("stream", False)
    pieces, error = ask("NONE")  # nothing shown yet: retryable, as a real provider's
    assert (pieces, error.kind, error.retryable) == ([], "stream_broken", True)


@needs_local
def test_the_embedded_model_streams_its_answer_token_by_token() -> None:
    provider = local.LocalProvider()
    request, pieces = streamed(max_tokens=12)

    async def go() -> Any:
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    response = asyncio.run(go())
    assert len(pieces) > 1
    assert "".join(pieces) == response.content
    assert response.usage.output_tokens == len(pieces)
    assert response.usage.input_tokens > 0
