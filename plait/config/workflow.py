"""`[tools]` and `[code]`: what TOOL and CODE nodes may run on this machine, and their limits.

Both are the operator's decision, never a graph's: a graph names a program, and the run is
refused before it starts unless `[tools] allow` lists it; Python CODE runs only where
`[code] python = true`, because a child process is not a sandbox (see docs/security.md).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from plait.config.providers import Strict

DEFAULT_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


class ToolsConfig(Strict):
    """`[tools]`: the programs TOOL nodes may run, and how."""

    allow: tuple[str, ...] = ()
    """Program names (looked up on PATH) or absolute paths; nothing else runs."""
    env: tuple[str, ...] = DEFAULT_ENV
    """The variables of Plait's own environment a program gets; a node's `env` adds its own."""
    timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 30.0
    """A program's wall-clock limit when its node sets no `timeout_s`."""
    max_timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 600.0
    """The longest `timeout_s` a TOOL node may ask for."""
    max_output_bytes: Annotated[int, Field(gt=0)] = 1_000_000
    """stdout past this size fails the node (the program is stopped at once)."""


class CodeConfig(Strict):
    """`[code]`: CODE nodes in Python."""

    python: bool = False
    """Run `language: python` CODE nodes (in a child process with limits; off by default)."""
    python_executable: str | None = None
    """The interpreter to run them with (default: the one running Plait)."""
    timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 10.0
    """Wall-clock limit of a Python CODE node without its own `timeout_s`."""
    max_timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 300.0
    memory_mb: Annotated[int, Field(ge=32)] = 512
    """Address-space limit of the child (RLIMIT_AS)."""
    max_output_bytes: Annotated[int, Field(gt=0)] = 1_000_000
    """The JSON of the result, and what the code prints, each at most this size."""
