"""`plait.toml`: the one configuration file, and the settings it holds for every package.

Providers, roles and the pool (`providers`), MCP servers (`mcp`), the sandbox's limits
(`sandbox`), what TOOL and CODE nodes may run (`workflow`), found by `files` and loaded and
validated by `loader`. Only the model and the
redactor are below it: every other package reads its settings from here.
"""

from plait.config.editable import ContextConfig, SettingsConfig
from plait.config.files import CONFIG_ENV, DEFAULT_FILE, config_path
from plait.config.loader import (
    ConfigError,
    PlaitConfig,
    builtin_config,
    code_settings,
    configured_servers,
    context_settings,
    file_data,
    follow_settings,
    followed,
    forget_loaded,
    jail_settings,
    load_config,
    register_secrets,
    resources_settings,
    runs_settings,
    sandbox_settings,
    tools_settings,
)
from plait.config.mcp import McpServerConfig, MissingSecret
from plait.config.providers import (
    DEFAULT_ROLE,
    EMBEDDED_MODEL,
    Capability,
    JsonMode,
    ModelConfig,
    PoolConfig,
    ProviderConfig,
    Tokenizer,
)
from plait.config.resources import ResourcesConfig
from plait.config.runs import RunsConfig
from plait.config.sandbox import SandboxConfig
from plait.config.variables import unsafe_variable
from plait.config.workers import WorkersConfig
from plait.config.workflow import CodeConfig, JailConfig, ToolsConfig

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_FILE",
    "DEFAULT_ROLE",
    "EMBEDDED_MODEL",
    "Capability",
    "CodeConfig",
    "ConfigError",
    "ContextConfig",
    "JailConfig",
    "JsonMode",
    "McpServerConfig",
    "MissingSecret",
    "ModelConfig",
    "PlaitConfig",
    "PoolConfig",
    "ProviderConfig",
    "ResourcesConfig",
    "RunsConfig",
    "SandboxConfig",
    "SettingsConfig",
    "Tokenizer",
    "ToolsConfig",
    "WorkersConfig",
    "builtin_config",
    "code_settings",
    "config_path",
    "configured_servers",
    "context_settings",
    "file_data",
    "follow_settings",
    "followed",
    "forget_loaded",
    "jail_settings",
    "load_config",
    "register_secrets",
    "resources_settings",
    "runs_settings",
    "sandbox_settings",
    "tools_settings",
    "unsafe_variable",
]
