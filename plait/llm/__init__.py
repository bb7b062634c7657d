"""LLM access: provider-neutral types, the provider interface, the scripted provider."""

from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse, ProviderError, ToolCall, Usage

__all__ = ["ChatRequest", "ChatResponse", "Provider", "ProviderError", "ToolCall", "Usage"]
