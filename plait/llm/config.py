"""Deprecated home of the plait.toml loader: it is `plait.config` now (docs/changes.md)."""

import warnings

from plait.config import (
    CONFIG_ENV,
    DEFAULT_ROLE,
    Capability,
    ConfigError,
    JsonMode,
    ModelConfig,
    PlaitConfig,
    PoolConfig,
    ProviderConfig,
    SandboxConfig,
    Tokenizer,
    builtin_config,
    config_path,
    load_config,
    register_secrets,
)

warnings.warn("`plait.llm.config` is deprecated: import from `plait.config`", DeprecationWarning, stacklevel=2)

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_ROLE",
    "Capability",
    "ConfigError",
    "JsonMode",
    "ModelConfig",
    "PlaitConfig",
    "PoolConfig",
    "ProviderConfig",
    "SandboxConfig",
    "Tokenizer",
    "builtin_config",
    "config_path",
    "load_config",
    "register_secrets",
]
