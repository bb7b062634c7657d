"""Loading `plait.toml`: providers and their models, roles, the pool, MCP servers, the sandbox.

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

    [[mcp_servers]]                  # see plait/config/mcp.py
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

import hashlib
import math
import os
from collections.abc import Callable, Iterator
from typing import TypeVar

import tomli
from pydantic import Field, ValidationError, field_validator, model_validator

from plait.config.editable import ContextConfig, SettingsConfig
from plait.config.files import config_path
from plait.config.mcp import McpServerConfig
from plait.config.providers import (
    DEFAULT_ROLE,
    EMBEDDED_MODEL,
    Capability,
    ModelConfig,
    PoolConfig,
    ProviderConfig,
    Strict,
    one_or_many_targets,
)
from plait.config.resources import ResourcesConfig
from plait.config.runs import RunsConfig
from plait.config.sandbox import SandboxConfig
from plait.config.workers import WorkersConfig
from plait.config.workflow import CodeConfig, JailConfig, ToolsConfig
from plait.errors import PlaitError, Refusal
from plait.model.documents import DocumentError, decode_text, read_limited
from plait.redact import register

T = TypeVar("T", bound=Strict)


class ConfigError(PlaitError, ValueError):
    """The configuration cannot be used; the message names the file, the key and the fix."""

    kind = Refusal.INVALID
    code = "config_invalid"


_in_force: PlaitConfig | None = None
"""The configuration this process loaded last (None: none loaded yet)."""
_following: Callable[[], PlaitConfig] | None = None
"""The settings in force of a process whose settings change while it runs (`follow_settings`)."""


class PlaitConfig(Strict):
    """A whole `plait.toml`, validated: every role names providers and models that exist, and no
    provider or MCP server id is used twice. Frozen: a loaded configuration never changes."""

    sandbox: SandboxConfig = SandboxConfig()
    tools: ToolsConfig = ToolsConfig()
    """What TOOL nodes may run (plait/config/workflow.py)."""
    code: CodeConfig = CodeConfig()
    """Whether and how CODE nodes run Python."""
    jail: JailConfig = JailConfig()
    """How TOOL programs and Python CODE are confined (plait/config/workflow.py)."""
    providers: tuple[ProviderConfig, ...] = ()
    pool: PoolConfig = PoolConfig()
    workers: WorkersConfig = WorkersConfig()
    resources: ResourcesConfig = ResourcesConfig()
    """What the engine does when the machine or the providers are short (plait/config/resources.py)."""
    runs: RunsConfig = RunsConfig()
    """The budget of one run, its child runs included (plait/config/runs.py)."""
    context: ContextConfig = ContextConfig()
    """How much of a conversation the chat's designer reads (plait/config/editable.py)."""
    settings: SettingsConfig = SettingsConfig()
    """What the settings page may change while the server runs (plait/config/editable.py)."""
    """Where runs execute: here, or on Celery workers (plait/config/workers.py)."""
    mcp_servers: tuple[McpServerConfig, ...] = ()
    """MCP servers nodes may use (plait/config/mcp.py)."""
    roles: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """role → "provider/model" targets in failover order."""
    source: str | None = Field(default=None, exclude=True)
    """The file it came from (None: built-in defaults)."""

    _one_or_many = field_validator("roles", mode="before")(one_or_many_targets)

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
        for provider_id in self.pool.order:
            if self.provider(provider_id) is None or self.pool.order.count(provider_id) > 1:
                known = ", ".join(p.id for p in self.providers) or "none"
                raise ValueError(
                    f"pool.order: {provider_id!r} is not a provider, or is listed twice (providers: {known})"
                )
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
        """The provider with that id, or None."""
        return next((p for p in self.providers if p.id == provider_id), None)

    def ordered(self, role: str) -> tuple[str, ...]:
        """The "provider/model" targets of `role` in the order they are tried: those on the
        providers `[pool] order` lists first, in its order, then the others as the role lists them."""
        targets = self.roles.get(role, ())
        rank = {provider_id: index for index, provider_id in enumerate(self.pool.order)}
        last = len(rank)
        return tuple(sorted(targets, key=lambda target: rank.get(target.partition("/")[0], last)))

    def targets(self, role: str) -> Iterator[tuple[ProviderConfig, str]]:
        """The (provider, model) pairs serving `role`, in failover order (`ordered`)."""
        for target in self.ordered(role):
            provider_id, _, model = target.partition("/")
            provider = self.provider(provider_id)
            if provider is not None:
                yield provider, model


def builtin_config() -> PlaitConfig:
    """No `plait.toml`: the embedded model serves every role (when it is installed)."""
    local = ProviderConfig(
        id="local",
        kind="local",
        max_concurrency=1,
        models=(ModelConfig(name=EMBEDDED_MODEL, context=2048, capabilities=(Capability.JSON_SCHEMA,)),),
    )
    return PlaitConfig(providers=(local,), roles={DEFAULT_ROLE: (f"local/{EMBEDDED_MODEL}",)})


def load_config(explicit: str | None = None) -> PlaitConfig:
    """The configuration in force: `explicit`, else `$PLAIT_CONFIG`, else `./plait.toml`, else the
    built-in one. A file that cannot be used raises ConfigError naming the key and the fix."""
    path = config_path(explicit)
    if path is None:
        return builtin_config()
    try:  # bounded like every file Plait reads: `--config /dev/zero` is refused, not read forever
        raw = read_limited(path, f"the config file {path}")
    except DocumentError as exc:
        raise ConfigError(exc.message) from None
    key = (os.fspath(path), hashlib.blake2b(raw, digest_size=16).digest())
    config = _parsed.get(key)
    if config is None:
        config = _parse(path, raw)
        _parsed.clear()  # one file in force per process: the newest read
        _parsed[key] = config
    config = register_secrets(config)  # the secrets' values are read now: the environment may have changed
    global _in_force
    _in_force = config  # what the sandbox enforces in this process (`sandbox_settings`)
    return config


_parsed: dict[tuple[str, bytes], PlaitConfig] = {}
"""The configuration last parsed, by its file's path and the digest of its bytes: a command or a
server asks for it from several places, and the file is parsed and validated once (again only
when its text changed)."""


def _parse(path: os.PathLike[str] | str, raw: bytes) -> PlaitConfig:
    try:
        data = tomli.loads(decode_text(raw, f"the config file {path}"))
    except DocumentError as exc:
        raise ConfigError(exc.message) from None
    except tomli.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    try:
        return PlaitConfig.model_validate({**data, "source": str(path)})
    except ValidationError as exc:
        raise ConfigError(f"{path} is invalid:\n" + "\n".join(_problems(exc, data))) from None


def configured_servers(config: str | None = None) -> tuple[McpServerConfig, ...]:
    """The `[[mcp_servers]]` of plait.toml (`config`, else `$PLAIT_CONFIG`, else `./plait.toml`);
    none without a file. They apply whichever provider serves the models (`--llm` included)."""
    return load_config(config).mcp_servers if config_path(config) is not None else ()


def follow_settings(current: Callable[[], PlaitConfig] | None) -> None:
    """Make the settings in force those `current` returns, from now on (a server or a worker
    whose settings change while it runs: plait.toml with the stored settings over it); None
    goes back to the loaded file. `current` is called wherever a table is read: it must return
    at once, without I/O."""
    global _following
    _following = current


def followed() -> Callable[[], PlaitConfig] | None:
    """What `follow_settings` was last given (None: the loaded file is in force)."""
    return _following


def _current() -> PlaitConfig | None:
    """The configuration in force: the followed settings, else the file loaded last."""
    return _following() if _following is not None else _in_force


def tools_settings() -> ToolsConfig:
    """The `[tools]` table in force: the followed settings' or the loaded configuration's, else
    the file's own table, else the defaults (which allow no program)."""
    config = _current()
    return config.tools if config is not None else _table_alone("tools", ToolsConfig)


def code_settings() -> CodeConfig:
    """The `[code]` table in force, found like `tools_settings` (by default Python CODE is off)."""
    config = _current()
    return config.code if config is not None else _table_alone("code", CodeConfig)


def jail_settings() -> JailConfig:
    """The `[jail]` table in force, found like `tools_settings` (by default: bubblewrap)."""
    config = _current()
    return config.jail if config is not None else _table_alone("jail", JailConfig)


def resources_settings() -> ResourcesConfig:
    """The `[resources]` table in force, found like `tools_settings` (the seed's defaults)."""
    config = _current()
    return config.resources if config is not None else _table_alone("resources", ResourcesConfig)


def runs_settings() -> RunsConfig:
    """The `[runs]` table in force, found like `tools_settings` (validating a graph checks its
    static bounds against it; engines enforce it while runs execute)."""
    config = _current()
    return config.runs if config is not None else _table_alone("runs", RunsConfig)


def context_settings() -> ContextConfig:
    """The `[context]` table in force, found like `tools_settings` (the chat's designer reads it
    at each turn, so a change made at run time applies to the next turn)."""
    config = _current()
    return config.context if config is not None else _table_alone("context", ContextConfig)


def file_data(explicit: str | None = None) -> dict[str, object] | None:
    """The tables of the configuration file as written (`explicit`, else `$PLAIT_CONFIG`, else
    `./plait.toml`), unvalidated; None without a file. Says which values the file sets itself
    (the others are defaults); load it with `load_config` first, which reports its problems."""
    path = config_path(explicit)
    if path is None:
        return None
    try:
        text = decode_text(read_limited(path, f"the config file {path}"), f"the config file {path}")
        return dict(tomli.loads(text))
    except DocumentError as exc:
        raise ConfigError(exc.message) from None
    except tomli.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None


def _table_alone(name: str, model: type[T]) -> T:
    """One table of the configuration file, validated alone; its defaults when there is no file
    or the table is unusable (loading the whole file reports that)."""
    path = config_path()
    if path is None:
        return model()
    try:
        text = decode_text(read_limited(path, f"the config file {path}"), f"the config file {path}")
        table = tomli.loads(text).get(name, {})
        return model.model_validate(table)
    except (DocumentError, tomli.TOMLDecodeError, ValidationError):
        return model()


def sandbox_settings() -> SandboxConfig:
    """The `[sandbox]` table in force: the loaded configuration's, else the file's own table
    read alone (validating a graph must not set up providers), else the defaults."""
    config = _current()
    if config is not None:
        return config.sandbox
    path = config_path()
    if path is None:
        return SandboxConfig()
    try:
        text = decode_text(read_limited(path, f"the config file {path}"), f"the config file {path}")
        table = tomli.loads(text).get("sandbox", {})
    except (DocumentError, tomli.TOMLDecodeError):
        return SandboxConfig()  # loading the configuration reports the file's problem
    value = table.get("max_timeout_s") if isinstance(table, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return SandboxConfig(max_timeout_s=float(value))
    return SandboxConfig()


def forget_loaded() -> None:
    """Read `[sandbox]` from the file again (tests that change plait.toml between loads)."""
    global _in_force
    _in_force = None
    _parsed.clear()


def register_secrets(config: PlaitConfig) -> PlaitConfig:
    """Tell the redactor the secret values this configuration refers to (provider keys and MCP
    `%secrets.NAME%` values, read from the environment now), so that no echo of them is stored,
    logged or returned; `config` is returned unchanged."""
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
