"""`[tools]`, `[code]` and `[jail]`: what TOOL and CODE nodes may run on this machine, and how.

All three are the deployer's decision, never a graph's: a graph names a program, and the run is
refused before it starts unless `[tools] allow` lists it; Python CODE runs only where
`[code] python = true`. Both run inside the jail (`plait/sandbox/jail.py`) unless `[jail] mode =
"none"` says, in so many words, that this machine runs them unconfined (see docs/security.md).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from plait.config.providers import Strict
from plait.config.variables import unsafe_variable

DEFAULT_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


def _safe_names(names: tuple[str, ...]) -> tuple[str, ...]:
    for name in names:
        problem = unsafe_variable(name)
        if problem is not None:
            raise ValueError(f"{problem}: remove it from the list")
    return names


class ToolsConfig(Strict):
    """`[tools]`: the programs TOOL nodes may run, and how."""

    allow: tuple[str, ...] = ()
    """Program names (looked up on PATH) or absolute paths; nothing else runs."""
    env: tuple[str, ...] = DEFAULT_ENV
    """The variables of Plait's own environment a program gets."""
    node_env: tuple[str, ...] = ()
    """The variables a node's `env` may set (none by default)."""
    network: tuple[str, ...] = ()
    """Entries of `allow` whose programs may reach the network (the others have none)."""
    timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 30.0
    """A program's wall-clock limit when its node sets no `timeout_s`."""
    max_timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 600.0
    """The longest `timeout_s` a TOOL node may ask for."""
    max_output_bytes: Annotated[int, Field(gt=0)] = 1_000_000
    """stdout past this size fails the node (the program is stopped at once)."""
    processes: Annotated[int, Field(ge=1, le=65536)] = 256
    """How many processes and threads a program may have at once (where a per-node cgroup can be made)."""

    @field_validator("env", "node_env")
    @classmethod
    def _safe(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        return _safe_names(names)

    @model_validator(mode="after")
    def _network_is_allowed(self) -> ToolsConfig:
        stray = [name for name in self.network if name not in self.allow]
        if stray:
            raise ValueError(f"network names {stray[0]!r}, which allow does not list: add it to allow, or remove it")
        return self


class CodeConfig(Strict):
    """`[code]`: CODE nodes in Python."""

    python: bool = False
    """Run `language: python` CODE nodes (in the jail; off by default)."""
    python_executable: str | None = None
    """The interpreter to run them with (default: the one running Plait)."""
    timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 10.0
    """Wall-clock limit of a Python CODE node without its own `timeout_s`."""
    max_timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 300.0
    memory_mb: Annotated[int, Field(ge=32)] = 512
    """The memory of all the code's processes together (a per-node cgroup), and of each (RLIMIT_AS)."""
    processes: Annotated[int, Field(ge=1, le=4096)] = 32
    """How many processes and threads the code may have at once, the interpreter's own included."""
    max_output_bytes: Annotated[int, Field(gt=0)] = 1_000_000
    """The JSON of the result, and what the code prints, each at most this size."""


class JailConfig(Strict):
    """`[jail]`: how TOOL programs and Python CODE are confined (bubblewrap), or that they are not."""

    mode: Literal["bwrap", "none"] = "bwrap"
    """`bwrap`: every program runs in a bubblewrap jail, and none runs where no jail works here;
    `none`: programs run unconfined, with Plait's user's rights (said at every start)."""
    bwrap: Annotated[str, Field(min_length=1)] = "bwrap"
    """The bubblewrap executable: a name looked up on PATH, or an absolute path."""
    folder_mb: Annotated[int, Field(ge=1, le=65536)] = 64
    """Size of the jail's one writable folder (`/tmp`, in memory; it vanishes with the jail)."""
    cgroup: str | None = None
    """A cgroup v2 folder delegated to Plait, with the memory and pids controllers enabled for its
    children; default: Plait's own cgroup (cgroup v1 hierarchies are found by themselves)."""
