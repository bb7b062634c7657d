"""The server-wide cap on an expression's time limit: plait.toml `[sandbox] max_timeout_s`.

A graph chooses each TRANSFORM/CONDITION node's `timeout_s`; the operator chooses how far any
graph may go. `plait validate` refuses a node over the cap, and `JsSandbox` refuses such a
request too, so no caller can hold a sandbox thread longer. The cap comes from `plait.config`
(`sandbox_settings`): the file this process loaded, else the file's `[sandbox]` table alone.
"""

from __future__ import annotations

import math


def max_timeout_s() -> float:
    """The cap in force: the loaded plait.toml's `[sandbox] max_timeout_s`, else the file's, else 30 s."""
    from plait.config import sandbox_settings  # the configuration models load only when asked

    return sandbox_settings().max_timeout_s


def timeout_problem(timeout_s: float, cap: float) -> str | None:
    """Why `timeout_s` cannot be an expression's time limit under `cap`, or None."""
    if not isinstance(timeout_s, int | float) or isinstance(timeout_s, bool):
        return f"timeout_s must be a number of seconds, not {type(timeout_s).__name__}"
    if not math.isfinite(timeout_s) or timeout_s <= 0:
        return f"timeout_s must be a positive, finite number of seconds (got {timeout_s})"
    if timeout_s > cap:
        return (
            f"timeout_s {timeout_s:g} s is over the sandbox's limit of {cap:g} s "
            "(plait.toml [sandbox] max_timeout_s); lower it, or raise the limit in plait.toml"
        )
    return None
