"""The provider protocol the engine calls. Real providers and the pool come with the providers issue."""

from __future__ import annotations

from typing import Protocol

from plait.llm.types import ChatRequest, ChatResponse


class Provider(Protocol):
    name: str

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one chat request, or raise ProviderError."""
        ...

    async def aclose(self) -> None: ...
