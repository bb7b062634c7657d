"""`[sandbox]`: the limits of the JavaScript sandbox that the operator sets for every graph."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from plait.config.providers import Strict


class SandboxConfig(Strict):
    """`[sandbox]`: limits of the JavaScript sandbox (plait/sandbox/limits.py)."""

    max_timeout_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 30.0
    """The longest time limit any expression may have (a node's `timeout_s` above it is refused)."""
