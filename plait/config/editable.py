"""`[settings]` and `[context]`: what the settings page may change while the server runs, and the
conversation budget of the chat's designer (one of the things it may change).

    [settings]
    enabled = true                    # false: the settings are read-only (GET works, PUT is refused)
    fixed = ["providers"]             # sections the page cannot change (plait.toml alone decides)
    key_envs = ["OPENROUTER_API_KEY"] # more variables a provider added by the page may take its key from

    [context]
    history_tokens = 750              # the conversation's share of the designer's prompt
    compress_at = 0.8                 # past this share of it, older turns are summarised
    recent_share = 0.60               # of history_tokens: the newest turns, verbatim
    summary_share = 0.15              # a running summary of the older turns
    facts_share = 0.25                # facts the chat's memory recalls for the request

Both are the deployer's: the page never changes `[settings]` (docs/configuration.md, "Settings at
run time").
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from plait.config.providers import Strict
from plait.config.variables import NAME

Section = Literal["roles", "providers", "pool", "resources", "context", "sandbox", "tools"]
SECTIONS: tuple[Section, ...] = ("roles", "providers", "pool", "resources", "context", "sandbox", "tools")
"""The sections of plait.toml the settings page edits, in the order it shows them."""

Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]


class SettingsConfig(Strict):
    """`[settings]`: whether and how far the settings may be changed at run time."""

    enabled: bool = True
    """False: `PUT /api/settings` (and reverts) are refused; the settings stay as plait.toml says."""
    fixed: tuple[Section, ...] = ()
    """Sections only plait.toml sets: a change touching one is refused."""
    key_envs: tuple[str, ...] = ()
    """Environment variables, besides those plait.toml's own providers name, that a provider
    changed or added at run time may take its key from, sent to any URL it is given."""

    @field_validator("key_envs")
    @classmethod
    def _names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable's name (letters, digits and _ only)")
        return names


class ContextConfig(Strict):
    """`[context]`: how much of a conversation the chat's designer reads, and how it is compressed."""

    history_tokens: Annotated[int, Field(ge=50, le=1_000_000)] = 750
    """The conversation's share of the designer's prompt, in estimated tokens: small by default,
    so that it fits beside the draft and the catalog in a small model's context too."""
    compress_at: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.8
    """Up to this share of `history_tokens` the conversation goes in whole."""
    recent_share: Share = 0.60
    """Past it: the newest turns verbatim, within this share."""
    summary_share: Share = 0.15
    """The older turns' first sentences, within this share (and what the facts leave unspent)."""
    facts_share: Share = 0.25
    """The facts the chat's memory recalls for the request, within this share."""

    @model_validator(mode="after")
    def _shares(self) -> ContextConfig:
        total = self.recent_share + self.summary_share + self.facts_share
        if total > 1.0 + 1e-9:
            raise ValueError(
                f"recent_share + summary_share + facts_share is {total:g}: the three split history_tokens, "
                "so they may add up to 1 at most"
            )
        return self

    @property
    def split(self) -> tuple[float, float, float]:
        """(recent turns, summary, recalled facts) as shares of `history_tokens`."""
        return (self.recent_share, self.summary_share, self.facts_share)
