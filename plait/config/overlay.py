"""The settings changed at run time: an overlay over plait.toml, kept in the store.

plait.toml holds what the deployer fixed; what the settings page changes is a `SettingsOverlay`
(every section optional: `roles`, `providers` by id, `pool`, `resources`, `context`, `sandbox`,
`tools`). `apply_overlay` lays it over the file's configuration and validates the whole result
again, as `plait config check` would, so a change is refused with the same `ConfigError` a bad
plait.toml gives, naming the key and the fix. What the deployer keeps for themselves is checked
here too (docs/security.md, "Settings at run time"):

- a section `[settings] fixed` names cannot be changed, and `[settings] enabled = false` refuses
  every change (`SettingsRefused`);
- the sandbox's and the tools' limits may only be tightened: the file's value is the cap;
- a provider takes its key only from a variable the deployer allowed: one plait.toml's own
  providers name (and then only sent to a URL plait.toml sends it to), or one `[settings]
  key_envs` lists. The key itself is never in the overlay, only the variable's name.

Pure: no store, no environment read but whether a variable is set.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError, create_model, field_validator, model_validator

from plait.config.editable import SECTIONS, ContextConfig, SettingsConfig
from plait.config.loader import ConfigError, PlaitConfig, _problems
from plait.config.providers import ModelConfig, Strict, one_or_many_targets
from plait.config.resources import ResourcesConfig
from plait.config.sandbox import SandboxConfig
from plait.config.workflow import ToolsConfig
from plait.errors import PlaitError, Refusal

Path = tuple[str, ...]
PROVIDER_FIELDS = ("kind", "base_url", "api_key_env", "max_concurrency", "rpm", "tpm", "enabled", "models")
"""What the settings page may change of a provider (its `file`, retries and the rest are plait.toml's)."""
TOOLS_LIMITS = ("timeout_s", "max_timeout_s", "max_output_bytes", "processes")
CAPPED: tuple[Path, ...] = (("sandbox", "max_timeout_s"), *(("tools", name) for name in TOOLS_LIMITS))
"""Limits an overlay may only lower: the file's value (or the default) is the cap."""


class SettingsRefused(PlaitError):
    """The deployer does not let this be changed at run time (`[settings]` of plait.toml)."""

    kind = Refusal.FORBIDDEN
    code = "settings_fixed"


def _optional(name: str, model: type[BaseModel], only: tuple[str, ...] | None = None) -> type[Strict]:
    """A patch of `model`: its fields (or `only` those), each optional, with the same checks."""
    fields: dict[str, Any] = {}
    for field_name, info in model.model_fields.items():
        if only is not None and field_name not in only:
            continue
        kind: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        fields[field_name] = (kind | None, None)
    return create_model(name, __base__=Strict, **fields)


ResourcesPatch = _optional("ResourcesPatch", ResourcesConfig)
ContextPatch = _optional("ContextPatch", ContextConfig)
SandboxPatch = _optional("SandboxPatch", SandboxConfig, ("max_timeout_s",))
ToolsPatch = _optional("ToolsPatch", ToolsConfig, TOOLS_LIMITS)


class ProviderPatch(Strict):
    """A provider as the settings change it: a listed id patches plait.toml's provider, a new id
    adds one. Its key is never here: `api_key_env` names the variable that holds it."""

    kind: Literal["openai", "local", "scripted"] | None = None
    base_url: Annotated[str, Field(min_length=1, max_length=2000)] | None = None
    api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=200)] | None = None
    max_concurrency: Annotated[int, Field(gt=0, le=10_000)] | None = None
    rpm: Annotated[int, Field(gt=0)] | None = None
    tpm: Annotated[int, Field(gt=0)] | None = None
    enabled: bool | None = None
    models: tuple[ModelConfig, ...] | None = None


class PoolPatch(Strict):
    order: tuple[str, ...] | None = None
    """Provider ids in the order a role's targets are tried (`[pool] order`)."""
    degrade_to: str | None = None


ProviderId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$", max_length=128)]


class SettingsOverlay(Strict):
    """What the settings page changed, by section; a section left out is plait.toml's."""

    roles: dict[Annotated[str, Field(min_length=1, max_length=128)], tuple[str, ...]] | None = None
    providers: dict[ProviderId, ProviderPatch] | None = None
    pool: PoolPatch | None = None
    resources: ResourcesPatch | None = None  # type: ignore[valid-type]
    context: ContextPatch | None = None  # type: ignore[valid-type]
    sandbox: SandboxPatch | None = None  # type: ignore[valid-type]
    tools: ToolsPatch | None = None  # type: ignore[valid-type]

    _one_or_many = field_validator("roles", mode="before")(one_or_many_targets)

    @model_validator(mode="after")
    def _nothing_empty(self) -> SettingsOverlay:
        for role, targets in (self.roles or {}).items():
            if not targets:
                raise ValueError(f"role {role!r} has no targets: give at least one 'provider/model'")
        return self

    def data(self) -> dict[str, Any]:
        """The overlay as stored: only what it sets."""
        return self.model_dump(mode="json", exclude_none=True)


def parse_overlay(data: dict[str, Any], where: str = "settings") -> SettingsOverlay:
    """`data` as an overlay; a ConfigError naming each wrong key (`settings.providers.x.rpm`)."""
    try:
        return SettingsOverlay.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            key = ".".join([where, *(str(part) for part in error["loc"])])
            message = error["msg"].removeprefix("Value error, ")
            if error["type"] == "extra_forbidden":
                message = "not a setting the page may change (see docs/configuration.md, 'Settings at run time')"
            problems.append(f"  {key}: {message}")
        raise ConfigError("the settings are invalid:\n" + "\n".join(problems)) from None


# -- patches, flattened keys, differences --------------------------------------------------------


def touched(patch: dict[str, Any]) -> list[str]:
    """The sections a patch changes; a ConfigError for a key that is not one."""
    unknown = sorted(set(patch) - set(SECTIONS))
    if unknown:
        raise ConfigError(
            f"settings.{unknown[0]}: not a section the settings may change",
            f"change one of {', '.join(SECTIONS)}",
        )
    return [section for section in SECTIONS if section in patch]


def merge(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`patch` laid over `current`: objects merged key by key, anything else replaced, and a
    `null` removes the key (plait.toml's value applies again). `providers.remove: [ids]` is the
    same as a `null` for each id."""
    patch = dict(patch)
    providers = patch.get("providers")
    if isinstance(providers, dict) and isinstance(providers.get("remove"), list):
        providers = dict(providers)
        for provider_id in providers.pop("remove"):
            providers[str(provider_id)] = None
        patch["providers"] = providers
    return _merged(current, patch)


def _merged(current: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(current)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
            continue
        if isinstance(value, dict):
            value = _merged(out[key] if isinstance(out.get(key), dict) else {}, value)
            if not value:
                out.pop(key, None)
                continue
        out[key] = value
    return out


def flatten(data: dict[str, Any], prefix: Path = ()) -> dict[Path, Any]:
    """Each value of a nested overlay by its path (`("providers", "x", "rpm")`); lists are values."""
    flat: dict[Path, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(flatten(value, (*prefix, key)))
        else:
            flat[(*prefix, key)] = value
    return flat


def unflatten(flat: dict[Path, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for path, value in flat.items():
        node = data
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return data


def dotted(path: Path) -> str:
    return ".".join(path)


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[Path, Any, Any]]:
    """(path, old value, new value) of each key the two overlays set differently (None: unset)."""
    before, after = flatten(old), flatten(new)
    keys = sorted(set(before) | set(after))
    return [(key, before.get(key), after.get(key)) for key in keys if before.get(key) != after.get(key)]


def reverted(current: dict[str, Any], previous: dict[str, Any], changed: dict[str, Any]) -> dict[str, Any]:
    """`current` with the keys one change set (from `previous` to `changed`) back as they were
    before it; what later changes set elsewhere stays."""
    flat = flatten(current)
    for path, old, _new in differences(previous, changed):
        if old is None:
            flat.pop(path, None)
        else:
            flat[path] = old
    return unflatten(flat)


# -- what the deployer keeps -----------------------------------------------------------------------


def check_allowed(settings: SettingsConfig, sections: list[str], where: str | None) -> None:
    """Refuse a change when the settings are read-only, or when it touches a fixed section."""
    name = where or "plait.toml"
    if not settings.enabled:
        raise SettingsRefused(
            "the settings cannot be changed while the server runs: the deployer turned that off",
            f"set [settings] enabled = true in {name} (and restart) to allow it, or change {name} itself",
            code="settings_disabled",
        )
    fixed = [section for section in sections if section in settings.fixed]
    if fixed:
        raise SettingsRefused(
            f"the section '{fixed[0]}' is fixed by the deployer: only {name} sets it",
            f"change [{fixed[0]}] in {name}, or remove '{fixed[0]}' from [settings] fixed there",
        )


def check_caps(base: PlaitConfig, overlay: SettingsOverlay) -> None:
    """Refuse a sandbox or tools limit above the file's (the cap), naming the cap."""
    where = base.source or "the built-in configuration"
    for section, name in CAPPED:
        value = _overlay_value(overlay, section, name)
        cap = getattr(getattr(base, section), name)
        if value is not None and value > cap:
            raise ConfigError(
                f"settings.{section}.{name} = {value:g} is above its cap, {cap:g} ({where}): "
                "settings changed here may only tighten the sandbox's and the tools' limits",
                f"give at most {cap:g}, or raise [{section}] {name} in plait.toml",
            )


def check_keys(base: PlaitConfig, providers: dict[str, ProviderPatch] | None, merged: PlaitConfig) -> None:
    """Refuse a provider the overlay points at a key the deployer did not allow for it: a
    variable neither `[settings] key_envs` lists nor plait.toml's providers name, or one of
    theirs sent to another URL than plait.toml sends it to."""
    open_names = set(base.settings.key_envs)
    origins = key_hosts(base)
    for provider_id, patch in (providers or {}).items():
        if patch.api_key_env is None and patch.base_url is None and base.provider(provider_id) is not None:
            continue  # neither where it sends nor what: as plait.toml says
        provider = merged.provider(provider_id)
        name = provider.api_key_env if provider is not None else None
        if name is None or name in open_names:
            continue
        key = f"settings.providers.{provider_id}"
        if name not in origins:
            allowed = ", ".join(sorted(open_names | set(origins))) or "none"
            raise ConfigError(
                f"{key}.api_key_env: {name} is not a variable the deployer lets providers take a key from "
                f"(allowed: {allowed})",
                f"name one of those, or ask the deployer to add {name} to [settings] key_envs in plait.toml",
            )
        where = origin(provider.base_url if provider is not None else None)
        if where not in origins[name]:
            raise ConfigError(
                f"{key}.base_url: the key in {name} is sent only to {', '.join(sorted(origins[name]))}, as "
                f"plait.toml sends it, not to {where}",
                f"keep the base URL's host, or ask the deployer to add {name} to [settings] key_envs in plait.toml",
            )


def key_hosts(base: PlaitConfig) -> dict[str, set[str]]:
    """The variables plait.toml's providers take their keys from, each with where plait.toml
    sends it (`origin`s): a provider changed at run time sends it nowhere else, unless
    `[settings] key_envs` lists the variable."""
    hosts: dict[str, set[str]] = {}
    for declared in base.providers:
        if declared.api_key_env:
            hosts.setdefault(declared.api_key_env, set()).add(origin(declared.base_url))
    return hosts


def origin(url: str | None) -> str:
    """scheme://host:port of a URL (where a key would be sent)."""
    if not url:
        return "(no URL)"
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # not a port: compared as written
        return f"{scheme}://{parts.netloc.rpartition('@')[2].lower()}"
    default = {"https": 443, "http": 80}.get(scheme)
    shown = f":{port}" if port is not None and port != default else ""
    return f"{scheme}://{(parts.hostname or '').lower()}{shown}"


def _overlay_value(overlay: SettingsOverlay, section: str, name: str) -> Any:
    table = getattr(overlay, section)
    return getattr(table, name) if table is not None else None


def check_removals(base: PlaitConfig, patch: dict[str, Any]) -> None:
    """Refuse removing a provider plait.toml declares (only ones the settings added go)."""
    providers = patch.get("providers")
    removed = providers.get("remove") if isinstance(providers, dict) else None
    for provider_id in removed if isinstance(removed, list) else []:
        if base.provider(str(provider_id)) is not None:
            raise ConfigError(
                f"settings.providers.remove: the provider '{provider_id}' comes from plait.toml and stays",
                "disable it with enabled = false, or remove it from plait.toml",
            )


# -- the result ------------------------------------------------------------------------------------


def apply_overlay(base: PlaitConfig, overlay: SettingsOverlay) -> PlaitConfig:
    """plait.toml's configuration (`base`) with `overlay` laid over it, validated whole. The
    sections the file fixes are left as the file says, a limit over the file's cap is held to
    the cap, and a provider's key is checked (`check_keys`). ConfigError when the result is not
    a valid configuration, naming the key."""
    data = base.model_dump(mode="json")
    fixed = set(base.settings.fixed)
    kept = {section: getattr(overlay, section) if section not in fixed else None for section in SECTIONS}
    if kept["roles"]:
        data["roles"] = {**data["roles"], **{role: list(t) for role, t in kept["roles"].items()}}
    for provider_id, patch in (kept["providers"] or {}).items():
        fields = patch.model_dump(mode="json", exclude_none=True)
        row = next((p for p in data["providers"] if p["id"] == provider_id), None)
        if row is None:
            data["providers"].append({"id": provider_id, **fields})
        else:
            row.update(fields)
    for section in ("pool", "resources", "context", "sandbox", "tools"):
        table = kept[section]
        if table is not None:
            data[section].update(table.model_dump(mode="json", exclude_none=True))
    for section, name in CAPPED:
        data[section][name] = min(data[section][name], getattr(getattr(base, section), name))
    try:
        merged = PlaitConfig.model_validate({**data, "source": base.source})
    except ValidationError as exc:
        raise ConfigError("the settings would make the configuration invalid:\n" + "\n".join(_problems(exc, data)),
                          "change or revert the keys named") from None  # fmt: skip
    check_keys(base, kept["providers"], merged)
    return merged


def sources(
    config: PlaitConfig, overlay: SettingsOverlay, file: dict[str, Any] | None, set_at: dict[Path, int]
) -> dict[str, str]:
    """Where each value the settings page shows comes from, by dotted key: `settings rev N`
    (the change that set it), `plait.toml`, or `default`."""
    stored = flatten(overlay.data())
    written = _file_paths(file or {})
    where: dict[str, str] = {}
    for path in shown_paths(config):
        if path in stored and path not in _clamped(config, overlay):
            where[dotted(path)] = f"settings rev {set_at.get(path, 0)}"
        elif path in written:
            where[dotted(path)] = "plait.toml"
        else:
            where[dotted(path)] = "default"
    return where


def _clamped(config: PlaitConfig, overlay: SettingsOverlay) -> set[Path]:
    """Capped limits the overlay sets above what is in force (the file's cap won)."""
    return {
        (section, name)
        for section, name in CAPPED
        if (value := _overlay_value(overlay, section, name)) is not None
        and value > getattr(getattr(config, section), name)
    }


def shown_paths(config: PlaitConfig) -> list[Path]:
    """The keys the settings page shows (and `sources` says where each comes from)."""
    paths: list[Path] = [("roles", role) for role in config.roles]
    paths += [("providers", p.id, name) for p in config.providers for name in PROVIDER_FIELDS]
    paths += [("pool", "order"), ("pool", "degrade_to")]
    paths += [("resources", name) for name in ResourcesConfig.model_fields]
    paths += [("context", name) for name in ContextConfig.model_fields]
    paths += list(CAPPED)
    return paths


def _file_paths(file: dict[str, Any]) -> set[Path]:
    """The paths of the shown values that plait.toml writes itself."""
    paths: set[Path] = set()
    roles = file.get("roles")
    paths |= {("roles", str(role)) for role in (roles if isinstance(roles, dict) else {})}
    for row in file.get("providers") or []:
        if isinstance(row, dict) and "id" in row:
            paths |= {("providers", str(row["id"]), str(name)) for name in row if name != "id"}
    for section in ("pool", "resources", "context", "sandbox", "tools"):
        table = file.get(section)
        paths |= {(section, str(name)) for name in (table if isinstance(table, dict) else {})}
    return paths
