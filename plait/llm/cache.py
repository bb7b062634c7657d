"""Response-cache keys: a hash of what determines a model's answer.

The key covers the serving provider and model, the rendered messages, the tools, the
response_format, the temperature and the answer's token limit. Only providers whose
`cache_identity(request)` names them are cached: the scripted provider is not (its answers are
already deterministic, and tests count its calls).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from plait.llm.provider import Provider
from plait.llm.types import ChatRequest, ChatResponse

KEY_VERSION = 1
"""Bumped when what goes into a key changes, so that old entries are simply never hit."""


def cache_key(identity: str, request: ChatRequest) -> str:
    """The response-cache key of `request` served by `identity` ("provider/model"): a SHA-256 of
    canonical JSON of what determines the answer, so equal requests get equal keys in any process."""
    material = {
        "v": KEY_VERSION,
        "model": identity,
        "messages": request.messages,
        "tools": request.tools,
        "response_format": request.response_format,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
    }
    canonical = json.dumps(material, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def identity_of(provider: Provider | None, request: ChatRequest) -> str | None:
    """ "provider/model" that would answer `request`, or None when the provider is not cached."""
    return provider.cache_identity(request) if provider is not None else None


def stored_answer(response: ChatResponse) -> dict[str, Any]:
    """What the cache keeps of an answer: its content, tool calls and token usage (not its cost or decisions)."""
    return {
        "content": response.content,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in response.tool_calls],
        "usage": {"input": response.usage.input_tokens, "output": response.usage.output_tokens},
    }
