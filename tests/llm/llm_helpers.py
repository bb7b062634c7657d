"""Shared by the provider tests."""

from __future__ import annotations

import asyncio
from typing import Any

from plait.llm.types import ChatRequest, ChatResponse


def complete_once(provider: Any, request: ChatRequest) -> ChatResponse:
    """One request on a fresh event loop; the provider is closed afterwards."""

    async def go() -> ChatResponse:
        try:
            response: ChatResponse = await provider.complete(request)
            return response
        finally:
            await provider.aclose()

    return asyncio.run(go())
