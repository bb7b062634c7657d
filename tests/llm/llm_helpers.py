"""Shared by the provider tests."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from plait.llm import local
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


def complete_once(provider: Any, request: ChatRequest) -> ChatResponse:
    """One request on a fresh event loop; the provider is closed afterwards."""

    async def go() -> ChatResponse:
        try:
            response: ChatResponse = await provider.complete(request)
            return response
        finally:
            await provider.aclose()

    return asyncio.run(go())
