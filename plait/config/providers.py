"""`[[providers]]`, their `models`, and `[pool]`: who serves the models, at what price and limits.

Prices are USD per million tokens. Secrets never sit in the file: a provider names the
environment variable that holds its key (`api_key_env`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_ROLE = "chat"
EMBEDDED_MODEL = "gemma-3-270m"
"""The model `plait[local]` installs (Gemma 3 270M): without a plait.toml it serves every role."""


class Strict(BaseModel):
    """Every table of plait.toml: unknown keys are errors (a typo must not silently drop a limit)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Capability(StrEnum):
    """What a model is declared to support. A run that needs a capability its model does not list
    is refused before it starts, and `json_schema` output is asked for only where it is listed."""

    TOOLS = "tools"
    JSON_SCHEMA = "json_schema"
    VISION = "vision"
    MCP = "mcp"


class JsonMode(StrEnum):
    """How a provider is asked for structured output (servers differ; answers are validated anyway)."""

    JSON_SCHEMA = "json_schema"
    """`response_format: {type: json_schema, json_schema: {schema, strict}}` (OpenAI, vLLM, most hosted)."""
    JSON_OBJECT_SCHEMA = "json_object_schema"
    """`{type: json_object, schema}` (llama.cpp's server, which answers HTTP 500 to json_schema)."""
    JSON_OBJECT = "json_object"
    """`{type: json_object}` plus the schema in the system prompt (models without schema support)."""


class Tokenizer(StrEnum):
    """How a provider's prompt tokens are counted for budgets, limits and estimates (`plait.llm.tokens`)."""

    AUTO = "auto"
    """openai: the encoding tiktoken maps the model name to; local: the GGUF's own; else the estimate."""
    O200K_BASE = "o200k_base"
    CL100K_BASE = "cl100k_base"
    ESTIMATE = "estimate"
    """~4 characters per token."""


def one_or_many_targets(value: object) -> object:
    """`[roles]` as written: a role names one "provider/model" or a list of them in failover order."""
    if isinstance(value, dict):
        return {role: [targets] if isinstance(targets, str) else targets for role, targets in value.items()}
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(Strict):
    """One model of a provider: its prices, context window and capabilities."""

    name: Annotated[str, Field(min_length=1)]
    price_in: Annotated[float, Field(ge=0)] = 0.0
    """USD per million input tokens."""
    price_out: Annotated[float, Field(ge=0)] = 0.0
    """USD per million output tokens."""
    context: Annotated[int, Field(gt=0)] | None = None
    """Context window in tokens."""
    capabilities: tuple[Capability, ...] = ()

    def cost_usd(self, tokens_in: int, tokens_out: int) -> float:
        """What a call with these token counts costs, in USD."""
        return (tokens_in * self.price_in + tokens_out * self.price_out) / 1_000_000


class ProviderConfig(Strict):
    """One `[[providers]]` entry: where its models are served, and its limits and retries."""

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    kind: Literal["openai", "local", "scripted"]
    base_url: str | None = None
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (the key itself never goes in the file)."""
    file: str | None = None
    """scripted: the responses file; local: a GGUF file to load instead of the embedded model
    (relative to the plait.toml)."""
    max_concurrency: Annotated[int, Field(gt=0)] = 4
    reserve_share: Annotated[float, Field(ge=0, lt=1)] = 0.0
    """Share of `max_concurrency` kept for critical requests (node priority 8-10); idle slots when
    none come, so it is off (0) unless set."""
    rpm: Annotated[int, Field(gt=0)] | None = None
    tpm: Annotated[int, Field(gt=0)] | None = None
    enabled: bool = True
    json_mode: JsonMode | None = None
    """How to ask for structured output; unset, each model's capabilities decide (`json_mode_for`)."""
    tokenizer: Tokenizer = Tokenizer.AUTO
    """How prompt tokens are counted (see `Tokenizer`); the API's own count is recorded after a call."""
    timeout_s: Annotated[float, Field(gt=0)] = 120.0
    stream: bool = False
    """openai: read answers as a stream (a stream cut short is a retryable `stream_broken` error)."""
    retries: Annotated[int, Field(ge=0, le=10)] = 2
    """Retries on this provider of an error that may pass (429, 5xx, timeout, connection) before failing over."""
    backoff_s: Annotated[float, Field(gt=0)] = 0.5
    """First retry delay; doubled each retry (with jitter), a longer `Retry-After` wins."""
    models: tuple[ModelConfig, ...] = ()

    @model_validator(mode="after")
    def _kind_fields(self) -> ProviderConfig:
        if self.kind == "openai" and not self.base_url:
            raise ValueError("an openai provider needs base_url (e.g. https://api.openai.com/v1)")
        if self.kind == "scripted" and not self.file:
            raise ValueError("a scripted provider needs file = 'responses.yaml'")
        names = [m.name for m in self.models]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"model {duplicates[0]!r} is listed twice")
        return self

    def model(self, name: str) -> ModelConfig | None:
        """The listed model of that name, or None."""
        return next((m for m in self.models if m.name == name), None)

    def json_mode_for(self, model: str) -> JsonMode:
        """The form structured output is asked in from `model`: `json_mode` when set, else
        `json_schema` only for a model that declares that capability, and the form every
        OpenAI-compatible server accepts (`json_object`, the schema stated in the prompt) for
        the others: a server must not be sent a form its model was never said to support."""
        if self.json_mode is not None:
            return self.json_mode
        listed = self.model(model)
        if listed is not None and Capability.JSON_SCHEMA in listed.capabilities:
            return JsonMode.JSON_SCHEMA
        return JsonMode.JSON_OBJECT


class PoolConfig(Strict):
    """The `[pool]` table: what is tried when no target of a role can serve a request."""

    degrade_to: str | None = None
    """"provider/model" tried when every target of a role failed (a smaller or local model)."""
    order: tuple[str, ...] = ()
    """Provider ids in the order a role's targets are tried: the targets on these providers go
    first, in this order, the others after them in the role's own order (empty: the role's order)."""
