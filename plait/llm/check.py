"""What `plait config check` reports: can each provider be used here, and where does each role go.

A provider is usable when it is enabled and what it needs is present on this machine: the
environment variable named by `api_key_env` (its value is never read into the report, only
whether it is set), the embedded model's extra, a scripted provider's file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plait.config import McpServerConfig, PlaitConfig, ProviderConfig
from plait.redact import redact


@dataclass(frozen=True, slots=True)
class ProviderStatus:
    """Whether one configured provider can be used on this machine, and why not."""

    provider: ProviderConfig
    problems: tuple[str, ...]
    """Why it cannot be used here (empty: usable)."""
    key: str | None
    """`NAME (set)` / `NAME (missing)` for `api_key_env`; None when it has none."""

    @property
    def usable(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class RoleStatus:
    """Where one role's requests can go: each of its targets, with the reasons it cannot serve."""

    role: str
    targets: tuple[tuple[str, tuple[str, ...]], ...]
    """Each "provider/model" with why it cannot serve (empty: it can)."""

    @property
    def resolves_to(self) -> str | None:
        """The first target that can serve: where the role's requests go first."""
        return next((target for target, problems in self.targets if not problems), None)


@dataclass(frozen=True, slots=True)
class ConfigReport:
    """Every provider's and role's status, and the problems that keep roles from being served."""

    config: PlaitConfig
    providers: tuple[ProviderStatus, ...]
    roles: tuple[RoleStatus, ...]
    problems: tuple[str, ...] = field(default=())
    """Roles that no provider here can serve (each with the fix)."""

    @property
    def ok(self) -> bool:
        return not self.problems


def check_config(config: PlaitConfig) -> ConfigReport:
    """Check `config` against this machine (providers enabled, keys set, files and extras present)
    without calling any provider; a key's value never enters the report, only whether it is set."""
    providers = tuple(_provider_status(p, config.source) for p in config.providers)
    by_id = {s.provider.id: s for s in providers}
    roles: list[RoleStatus] = []
    problems: list[str] = []
    for role in config.roles:
        rows = tuple((target, by_id[target.partition("/")[0]].problems) for target in config.ordered(role))
        status = RoleStatus(role, rows)
        roles.append(status)
        if status.resolves_to is None:
            reasons = "; ".join(f"{target}: {', '.join(why)}" for target, why in rows)
            problems.append(f"role '{role}' cannot be served here ({reasons})")
    if not config.roles:
        problems.append('no roles: add a [roles] table, e.g. chat = "provider/model"')
    return ConfigReport(config, providers, tuple(roles), tuple(problems))


def _provider_status(provider: ProviderConfig, source: str | None) -> ProviderStatus:
    problems: list[str] = []
    key = None
    if not provider.enabled:
        problems.append("disabled")
    if provider.api_key_env:
        present = bool(os.environ.get(provider.api_key_env))
        key = f"{provider.api_key_env} ({'set' if present else 'missing'})"
        if not present:
            problems.append(f"set the environment variable {provider.api_key_env}")
    if provider.kind == "local":
        from plait.llm import local

        if not local.available():
            problems.append(local.INSTALL_HINT)
    if provider.kind == "scripted" and provider.file:
        base = Path(source).parent if source else Path()
        if not (base / provider.file).is_file():
            problems.append(f"no responses file {provider.file}")
    return ProviderStatus(provider, tuple(problems), key)


def report_json(report: ConfigReport) -> dict[str, Any]:
    """The report as `plait config check --json` prints it and `GET /api/providers` returns it:
    no secrets (key names, not values; URL credentials and any registered secret masked)."""
    shown: dict[str, Any] = redact(
        {
            "source": report.config.source,
            "ok": report.ok,
            "providers": [
                {
                    **status.provider.model_dump(mode="json", exclude={"models"}),
                    "key": status.key,
                    "usable": status.usable,
                    "problems": list(status.problems),
                    "models": [m.model_dump(mode="json") for m in status.provider.models],
                }
                for status in report.providers
            ],
            "roles": {
                role.role: {
                    "resolves_to": role.resolves_to,
                    "targets": [{"target": t, "problems": list(why)} for t, why in role.targets],
                }
                for role in report.roles
            },
            "mcp_servers": [mcp_server_json(m) for m in report.config.mcp_servers],
            "problems": list(report.problems),
        }
    )
    return shown


def mcp_server_json(server: McpServerConfig) -> dict[str, Any]:
    """An MCP server as configured: env values and url are shown unresolved (secrets stay names)."""
    return {
        **server.model_dump(mode="json"),
        "secrets": [{"name": name, "set": name in os.environ} for name in server.secrets()],
    }
