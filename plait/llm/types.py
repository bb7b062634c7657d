"""Provider-neutral chat types: what the engine sends and what a provider answers (OpenAI-shaped)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from plait.redact import redact_text


def response_schema(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON Schema inside a `response_format`, in either form (`json_schema.schema`, or the
    `schema` of `{type: json_object, schema}`); None when it carries none."""
    if not response_format:
        return None
    schema = (response_format.get("json_schema") or {}).get("schema") or response_format.get("schema")
    return schema if isinstance(schema, dict) else None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call in a model's answer. Immutable. `id` is the provider's id for the call, which
    the tool's result refers to; `arguments` is always a dict (the OpenAI provider keeps
    arguments that are not a JSON object as `{"_raw": text}` or `{"_value": value}`)."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens one call used, as the provider reports them (0 when it does not). Immutable."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One chat request, as the engine builds it and every provider takes it.

    Frozen: each layer changes it with `dataclasses.replace` (the pool sets `model`, the tool
    loop `messages` and `tools`). Its lists are shared, not copied, so a provider must not change
    `messages` or `tools` in place. `model` None: the model configured for the role's target
    (or a provider's first listed model). `timeout_s` bounds the whole call, waiting in the
    pool included (the engine enforces it).
    """

    node_id: str
    messages: list[dict[str, Any]]
    """OpenAI chat messages: `{"role": "system"|"user"|"assistant"|"tool", "content": ...}`."""
    model_role: str = "chat"
    model: str | None = None
    response_format: dict[str, Any] | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: Any = None
    """With `tools`: "auto" | "none" | "required" | {"type": "function", "function": {"name": ...}}."""
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float | None = None
    priority: int = 5
    """The node's priority, 0-10: the pool serves higher ones first and keeps a reserve for 8-10."""
    degraded: bool = False
    """Send it to `[pool] degrade_to` directly (the run was degraded for lack of resources)."""
    on_delta: Callable[[str], None] | None = field(default=None, compare=False, repr=False)
    """Set: the answer is streamed, each piece of its text passed here as it arrives (on the
    event loop's thread). Once a piece has been passed on, a broken stream is not retried: the
    caller has shown that text, and a second answer would follow it. Not part of the request's
    identity (the response cache ignores it)."""

    @property
    def user_prompt(self) -> str:
        """The last user message's text: what scripted `match:` rules search."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else str(content)
        return ""


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """A provider's answer to one request. Frozen; its lists are shared: do not change them.

    `content` is the answer's text, None when the model only called tools. `provider` and
    `model` name what really served the request (through the pool: the `plait.toml` provider id
    and model, which a failover may have changed), and `cost_usd` is that call's price (0.0 when
    unknown). `decisions` lists, in order, what the pool and the provider did on the way.
    """

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    provider: str = ""
    cost_usd: float = 0.0
    decisions: list[dict[str, Any]] = field(default_factory=list)
    """What the provider pool did on the way (queued, sent, retried, failed over...), recorded on the attempt."""
    finish: str | None = None
    """Why the model stopped, as its server said (`stop`, `length`: the token limit, `tool_calls`);
    None when it did not say. An answer stopped by `length` is cut, not complete."""
    limit: int | None = None
    """The token limit the answer was generated under, when the provider set it itself (the
    embedded model's default); None when the request named it or nobody said."""


class ProviderError(Exception):
    """A call that did not produce an answer; `retryable` says whether trying again may help.

    The message is redacted here, where every provider's error is built: servers echo the key
    or the credentialed URL they were sent, and the message travels to attempts, errors, events,
    logs and API answers."""

    def __init__(
        self,
        message: str,
        *,
        kind: str = "error",
        retryable: bool = True,
        retry_after: float | None = None,
        decisions: list[dict[str, Any]] | None = None,
    ):
        super().__init__(redact_text(message))
        self.kind = kind
        self.retryable = retryable
        self.retry_after = retry_after
        """Seconds the server asked to wait (`Retry-After`), if it said."""
        self.decisions = decisions or []
