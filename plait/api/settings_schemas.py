"""The bodies of /api/settings: the settings in force as the settings page shows them, a change,
and the history. Keys are never in them: a provider shows the NAME of the variable holding its
key and whether it is set (`key_set`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from plait.api.schemas import MAX_INT, CheckedIn
from plait.runs.settings import Effective, HistoryEntry
from plait.runs.settings_view import history_view, settings_view


class ModelOut(BaseModel):
    name: str
    price_in: float
    price_out: float
    context: int | None
    capabilities: list[str]


class ProviderOut(BaseModel):
    id: str
    kind: str
    base_url: str | None
    api_key_env: str | None = Field(description="The variable holding the key: its name, never its value.")
    key_set: bool = Field(description="Whether that variable is set in the server's environment.")
    max_concurrency: int
    rpm: int | None
    tpm: int | None
    enabled: bool
    from_: Literal["plait.toml", "settings"] = Field(
        alias="from", description="plait.toml (or the built-in configuration), or added by the settings."
    )
    models: list[ModelOut]

    model_config = {"populate_by_name": True}


class PoolOut(BaseModel):
    order: list[str]
    degrade_to: str | None


class SettingsOut(BaseModel):
    revision: int = Field(description="The revision in force (0: the settings were never changed).")
    editable: bool = Field(description="Whether the settings may be changed here (`[settings] enabled`).")
    fixed: list[str] = Field(description="Sections only plait.toml sets (`[settings] fixed`).")
    key_envs: list[str] = Field(description="Variables a provider may take its key from.")
    key_env_hosts: dict[str, list[str]] = Field(
        description="Of those, the ones whose key goes only where plait.toml sends it: name -> scheme://host."
    )
    roles: dict[str, list[str]]
    providers: list[ProviderOut]
    pool: PoolOut
    resources: dict[str, Any]
    context: dict[str, Any]
    limits: dict[str, dict[str, Any]] = Field(description="The sandbox's and the tools' limits in force.")
    caps: dict[str, dict[str, Any]] = Field(
        description="Their caps: plait.toml's values, which changes may not exceed."
    )
    sources: dict[str, str] = Field(description="Each shown key: `plait.toml`, `settings rev N` or `default`.")
    problem: str | None = Field(
        None,
        description="Why the stored settings do not apply to plait.toml any more (then plait.toml alone is in force).",
    )


class SettingsIn(CheckedIn):
    base_revision: Annotated[
        int, Field(ge=0, le=MAX_INT, description="The revision the change was made on (409 when stale).")
    ]
    settings: dict[str, Any] = Field(
        description="A patch of the sections to change (roles, providers, pool, resources, context, sandbox, tools); "
        "null removes a key (plait.toml's value applies again); providers.remove lists added providers to remove."
    )
    note: Annotated[str, Field(max_length=2000)] | None = None

    @field_validator("base_revision", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("a revision is an integer, not true or false")
        return value


class RevertIn(CheckedIn):
    note: Annotated[str, Field(max_length=2000)] | None = None


class KeyChange(BaseModel):
    key: str
    old: Any = Field(description="The value before (null: plait.toml's).")
    new: Any = Field(description="The value after (null: plait.toml's).")


class HistoryOut(BaseModel):
    revision: int
    at: float
    by: str
    note: str | None
    reverts: int | None
    changes: list[KeyChange]


def settings_out(found: Effective) -> SettingsOut:
    """The settings in force as the page shows them (`plait.runs.settings_view`)."""
    return SettingsOut.model_validate(settings_view(found))


def history_out(entry: HistoryEntry) -> HistoryOut:
    return HistoryOut.model_validate(history_view(entry))
