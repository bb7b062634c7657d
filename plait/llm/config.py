"""`plait.toml`: model providers, their models (prices, context, capabilities) and roles (SPEC §6.1).

Found at `--config FILE`, else `$PLAIT_CONFIG`, else `./plait.toml`; without one, the embedded
model serves every role when it is installed. The shape is a contract (keys are added, never
renamed):

    [[providers]]
    id = "deepseek"
    kind = "openai"                  # openai | local | scripted
    base_url = "https://api.deepseek.com/v1"
    api_key_env = "DEEPSEEK_API_KEY" # secrets only through the environment, never in the file
    max_concurrency = 5
    rpm = 600                        # optional
    tpm = 1000000                    # optional
    enabled = true
    json_mode = "json_schema"        # json_schema | json_object_schema | json_object (default: from capabilities)
    tokenizer = "auto"               # auto | o200k_base | cl100k_base | estimate
    models = [
      { name = "deepseek-chat", price_in = 0.27, price_out = 1.10, context = 65536,
        capabilities = ["tools", "json_schema"] },
    ]

    [roles]                          # a role maps to one "provider/model" or a failover list
    chat = ["deepseek/deepseek-chat", "local/smollm2"]

    [[mcp_servers]]                  # see plait/tools/mcp_config.py
    id = "time"
    transport = "stdio"
    command = "python"
    args = ["-m", "mcp_server_time"]

Prices are USD per million tokens. Unknown keys are errors (a typo must not silently drop a
limit), reported with their path in the file. The file is TOML 1.1 (parsed by `tomli`; the
standard library's `tomllib` reads TOML 1.1 only from Python 3.15), so an inline table may span
lines as in the example above.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

import tomli
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from plait.model.documents import DocumentError, decode_text, read_limited
from plait.tools.mcp_config import McpServerConfig

CONFIG_ENV = "PLAIT_CONFIG"
DEFAULT_FILE = "plait.toml"
DEFAULT_ROLE = "chat"


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the file, the key and the fix."""


class Capability(StrEnum):
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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelConfig(_Strict):
    name: Annotated[str, Field(min_length=1)]
    price_in: Annotated[float, Field(ge=0)] = 0.0
    """USD per million input tokens."""
    price_out: Annotated[float, Field(ge=0)] = 0.0
    """USD per million output tokens."""
    context: Annotated[int, Field(gt=0)] | None = None
    """Context window in tokens."""
    capabilities: tuple[Capability, ...] = ()

    def cost_usd(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.price_in + tokens_out * self.price_out) / 1_000_000


class ProviderConfig(_Strict):
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    kind: Literal["openai", "local", "scripted"]
    base_url: str | None = None
    api_key_env: str | None = None
    """Name of the environment variable holding the API key (the key itself never goes in the file)."""
    file: str | None = None
    """scripted: the responses file."""
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
    """openai: read answers as a stream (a stream cut short is a retryable `truncated` error)."""
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


class PoolConfig(_Strict):
    degrade_to: str | None = None
    """"provider/model" tried when every target of a role failed (a smaller or local model)."""


class SandboxConfig(_Strict):
    """`[sandbox]`: limits of the JavaScript sandbox (plait/sandbox/limits.py)."""

    max_timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 30.0
    """The longest time limit any expression may have (a node's `timeout_s` above it is refused)."""


class PlaitConfig(_Strict):
    sandbox: SandboxConfig = SandboxConfig()
    providers: tuple[ProviderConfig, ...] = ()
    pool: PoolConfig = PoolConfig()
    mcp_servers: tuple[McpServerConfig, ...] = ()
    """MCP servers nodes may use (plait/tools/mcp_config.py)."""
    roles: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """role → "provider/model" targets in failover order."""
    source: str | None = Field(default=None, exclude=True)
    """The file it came from (None: built-in defaults)."""

    @field_validator("roles", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        if isinstance(value, dict):
            return {role: [targets] if isinstance(targets, str) else targets for role, targets in value.items()}
        return value

    @model_validator(mode="after")
    def _references(self) -> PlaitConfig:
        ids = [p.id for p in self.providers]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"provider id {duplicates[0]!r} is used twice")
        servers = [m.id for m in self.mcp_servers]
        twice = sorted({i for i in servers if servers.count(i) > 1})
        if twice:
            raise ValueError(f"MCP server id {twice[0]!r} is used twice")
        for role, targets in self.roles.items():
            if not targets:
                raise ValueError(f"role {role!r} has no targets")
            for target in targets:
                self._check_target(role, target)
        if self.pool.degrade_to is not None:
            self._check_target("pool.degrade_to", self.pool.degrade_to)
        return self

    def _check_target(self, role: str, target: str) -> None:
        provider_id, slash, model = target.partition("/")
        if not slash or not model:
            raise ValueError(f"role {role!r}: target {target!r} is not 'provider/model'")
        provider = self.provider(provider_id)
        if provider is None:
            known = ", ".join(p.id for p in self.providers) or "none"
            raise ValueError(f"role {role!r}: no provider {provider_id!r} (providers: {known})")
        if provider.models and provider.model(model) is None:
            known = ", ".join(m.name for m in provider.models)
            raise ValueError(f"role {role!r}: provider {provider_id!r} has no model {model!r} (models: {known})")

    def provider(self, provider_id: str) -> ProviderConfig | None:
        return next((p for p in self.providers if p.id == provider_id), None)

    def targets(self, role: str) -> Iterator[tuple[ProviderConfig, str]]:
        """The (provider, model) pairs serving `role`, in failover order."""
        for target in self.roles.get(role, ()):
            provider_id, _, model = target.partition("/")
            provider = self.provider(provider_id)
            if provider is not None:
                yield provider, model


def builtin_config() -> PlaitConfig:
    """No `plait.toml`: the embedded model serves every role (when it is installed)."""
    from plait.llm.local import MODEL_NAME

    local = ProviderConfig(
        id="local",
        kind="local",
        max_concurrency=1,
        models=(ModelConfig(name=MODEL_NAME, context=2048, capabilities=(Capability.JSON_SCHEMA,)),),
    )
    return PlaitConfig(providers=(local,), roles={DEFAULT_ROLE: (f"local/{MODEL_NAME}",)})


def config_path(explicit: str | None = None) -> Path | None:
    """`--config`, else `$PLAIT_CONFIG`, else `./plait.toml` if it exists."""
    if explicit:
        return Path(explicit)
    from_env = os.environ.get(CONFIG_ENV)
    if from_env:
        return Path(from_env)
    default = Path(DEFAULT_FILE)
    return default if default.is_file() else None


def load_config(explicit: str | None = None) -> PlaitConfig:
    path = config_path(explicit)
    if path is None:
        return builtin_config()
    try:  # bounded like every file Plait reads: `--config /dev/zero` is refused, not read forever
        data = tomli.loads(decode_text(read_limited(path, f"the config file {path}"), f"the config file {path}"))
    except DocumentError as exc:
        raise ConfigError(exc.message) from None
    except tomli.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    try:
        config = register_secrets(PlaitConfig.model_validate({**data, "source": str(path)}))
    except ValidationError as exc:
        raise ConfigError(f"{path} is invalid:\n" + "\n".join(_problems(exc, data))) from None
    from plait.sandbox.limits import configure

    configure(config.sandbox.max_timeout_s)  # the sandbox enforces the file's cap in this process
    return config


def register_secrets(config: PlaitConfig) -> PlaitConfig:
    """Tell the redactor the secret values this configuration refers to (provider keys and MCP
    `%secrets.NAME%` values, read from the environment now), so that no echo of them is stored,
    logged or returned; `config` is returned unchanged."""
    from plait.redact import register

    names = [p.api_key_env for p in config.providers if p.api_key_env]
    names += [name for server in config.mcp_servers for name in server.secrets()]
    register(*(os.environ.get(name) for name in names))
    return config


def _problems(exc: ValidationError, data: dict[str, object]) -> Iterator[str]:
    for error in exc.errors():
        where = _path(error["loc"], data)
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key (check its spelling against docs/configuration.md)"
        yield f"  {where or '(top level)'}: {message}"


def _path(loc: tuple[int | str, ...], data: object) -> str:
    """`providers[0].models[1].price_in`, with the provider id when there is one."""
    parts: list[str] = []
    node = data
    for key in loc:
        if isinstance(key, int):
            label = f"[{key}]"
            if isinstance(node, list) and key < len(node) and isinstance(node[key], dict) and "id" in node[key]:
                label = f"[{key}] ({node[key]['id']})"
            parts.append(label)
            node = node[key] if isinstance(node, list) and key < len(node) else None
        else:
            parts.append(("." if parts else "") + key)
            node = node.get(key) if isinstance(node, dict) else None
    return "".join(parts)
