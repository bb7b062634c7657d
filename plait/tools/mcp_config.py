"""Deprecated home of the MCP server settings: they are `plait.config` now (docs/changes.md)."""

import warnings

from plait.config import McpServerConfig, MissingSecret, configured_servers
from plait.config.mcp import resolve

warnings.warn("`plait.tools.mcp_config` is deprecated: import from `plait.config`", DeprecationWarning, stacklevel=2)

__all__ = ["McpServerConfig", "MissingSecret", "configured_servers", "resolve"]
