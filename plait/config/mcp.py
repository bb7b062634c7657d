"""`[[mcp_servers]]`: the MCP servers registered in `plait.toml`, which nodes refer to by `id`.

    [[mcp_servers]]
    id = "time"
    name = "Time"
    transport = "stdio"            # stdio | sse | streamable_http
    command = "python"             # stdio only
    args = ["-m", "mcp_server_time"]
    url = ""                       # sse / streamable_http only
    env = { API_TOKEN = "%secrets.TIME_TOKEN%" }   # resolved from the environment at connect time
    capabilities = ["tools"]       # tools | resources | prompts

Secrets never sit in the file: `%secrets.NAME%` in an `env` value (or a `url`) is replaced by the
environment variable NAME when the server is started or connected to, and a missing one is an
error naming it. Nodes refer to servers by `id` (`mcp_servers: [{server_id: time}]`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from plait.errors import PlaitError, Refusal
from plait.redact import register

SECRET = re.compile(r"%secrets\.([A-Za-z_][A-Za-z0-9_]*)%")


class MissingSecret(PlaitError, ValueError):
    """An `%secrets.NAME%` reference whose environment variable is not set."""

    kind = Refusal.INVALID
    code = "missing_secret"


class McpServerConfig(BaseModel):
    """One `[[mcp_servers]]` entry, with exactly the fields its transport needs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    name: str = ""
    transport: Literal["stdio", "sse", "streamable_http"]
    command: str | None = None
    args: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    capabilities: tuple[Literal["tools", "resources", "prompts"], ...] = ("tools",)
    timeout_s: Annotated[float, Field(gt=0)] = 30.0
    """How long a call may take before the node fails."""
    startup_timeout_s: Annotated[float, Field(gt=0)] = 60.0
    """How long starting and connecting may take (a stdio server may first install itself, e.g. `npx -y`)."""

    @model_validator(mode="after")
    def _transport_fields(self) -> McpServerConfig:
        url = self.url or None
        if self.transport == "stdio":
            if not self.command:
                raise ValueError(f"MCP server {self.id!r}: transport stdio needs `command`")
            if url:
                raise ValueError(f"MCP server {self.id!r}: `url` is for sse / streamable_http, not stdio")
        else:
            if not url:
                raise ValueError(f"MCP server {self.id!r}: transport {self.transport} needs `url`")
            if self.command:
                raise ValueError(f"MCP server {self.id!r}: `command` is for stdio, not {self.transport}")
        return self

    def secrets(self) -> list[str]:
        """The environment variables its `env` and `url` refer to (names only, never values)."""
        texts = [*self.env.values(), self.url or ""]
        return sorted({name for text in texts for name in SECRET.findall(text)})

    def resolved_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        return {key: resolve(value, environ, self.id) for key, value in self.env.items()}

    def resolved_url(self, environ: Mapping[str, str]) -> str | None:
        return resolve(self.url, environ, self.id) if self.url else None


def resolve(text: str, environ: Mapping[str, str], server_id: str) -> str:
    """`text` with every `%secrets.NAME%` replaced by the environment variable NAME."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise MissingSecret(
                f"MCP server {server_id!r} needs the environment variable {name} (referenced as "
                f"%secrets.{name}%); set it before starting Plait"
            )
        register(environ[name])  # a server or its error quoting the value must not store or show it
        return environ[name]

    return SECRET.sub(value, text)
