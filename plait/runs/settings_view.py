"""The settings in force as people see them: the body of `GET /api/settings` and what
`plait config show --json` prints, built once here. No key is ever in it: a provider shows the
name of the variable holding its key, and whether that variable is set (`key_set`)."""

from __future__ import annotations

import os
from typing import Any

from plait.config import PlaitConfig
from plait.config.overlay import TOOLS_LIMITS, Path, dotted, key_hosts, shown_paths
from plait.runs.settings import Effective, HistoryEntry


def settings_view(found: Effective) -> dict[str, Any]:
    """The settings in force, with where each shown value comes from (`sources`)."""
    config, base = found.config, found.base
    allowed = sorted({p.api_key_env for p in base.providers if p.api_key_env} | set(base.settings.key_envs))
    hosts = {name: sorted(where) for name, where in key_hosts(base).items() if name not in base.settings.key_envs}
    providers = [
        {
            "id": p.id,
            "kind": p.kind,
            "base_url": p.base_url,
            "api_key_env": p.api_key_env,
            "key_set": bool(p.api_key_env and os.environ.get(p.api_key_env)),
            "max_concurrency": p.max_concurrency,
            "rpm": p.rpm,
            "tpm": p.tpm,
            "enabled": p.enabled,
            "from": "plait.toml" if base.provider(p.id) is not None else "settings",
            "models": [m.model_dump(mode="json") for m in p.models],
        }
        for p in config.providers
    ]
    return {
        "revision": found.revision,
        "editable": base.settings.enabled,
        "fixed": list(base.settings.fixed),
        "key_envs": allowed,
        "key_env_hosts": hosts,
        "roles": {role: list(targets) for role, targets in config.roles.items()},
        "providers": providers,
        "pool": {"order": list(config.pool.order), "degrade_to": config.pool.degrade_to},
        "resources": config.resources.model_dump(mode="json"),
        "context": config.context.model_dump(mode="json"),
        "limits": _limits(config),
        "caps": _limits(base),
        "sources": dict(found.sources),
        "problem": found.problem,
    }


def value_rows(found: Effective) -> list[dict[str, Any]]:
    """Each shown key with its value in force and where it comes from (`plait config show`)."""
    config = found.config
    return [
        {"key": dotted(path), "value": _value_at(config, path), "from": found.sources.get(dotted(path), "default")}
        for path in shown_paths(config)
    ]


def _value_at(config: PlaitConfig, path: Path) -> Any:
    if path[0] == "roles":
        return list(config.roles[path[1]])
    if path[0] == "providers":
        provider = config.provider(path[1])
        if provider is None:
            return None
        value = getattr(provider, path[2])
        return [m.name for m in value] if path[2] == "models" else value
    value = getattr(getattr(config, path[0]), path[1])
    return list(value) if isinstance(value, tuple) else value


def history_view(entry: HistoryEntry) -> dict[str, Any]:
    """One recorded change: who, when, why, which change it reverts, each key before and after."""
    return {
        "revision": entry.revision,
        "at": entry.at,
        "by": entry.by,
        "note": entry.note,
        "reverts": entry.reverts,
        "changes": list(entry.changes),
    }


def _limits(config: PlaitConfig) -> dict[str, dict[str, Any]]:
    return {
        "sandbox": {"max_timeout_s": config.sandbox.max_timeout_s},
        "tools": {name: getattr(config.tools, name) for name in TOOLS_LIMITS},
    }
