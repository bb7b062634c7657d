"""The server-wide cap on an expression's time limit: plait.toml `[sandbox] max_timeout_s`.

A graph chooses each TRANSFORM/CONDITION node's `timeout_s`; the operator chooses how far any
graph may go. `plait validate` refuses a node over the cap, and `ProcessSandbox` refuses such a
request too, so no caller can hold a sandbox child longer. Reading the cap parses only the
`[sandbox]` table of the configuration file, so validating a graph costs no provider setup.
"""

from __future__ import annotations

import math
import threading

DEFAULT_MAX_TIMEOUT_S = 30.0
"""Without a `[sandbox] max_timeout_s` setting: the longest any expression may run."""

_lock = threading.Lock()
_configured: float | None = None


def configure(max_timeout_s: float | None) -> None:
    """Set the cap for this process (from a loaded plait.toml); None: read the file again."""
    global _configured
    with _lock:
        _configured = max_timeout_s


def max_timeout_s() -> float:
    """The cap in force: configured, else plait.toml's `[sandbox] max_timeout_s`, else the default."""
    with _lock:
        if _configured is not None:
            return _configured
    return _from_file()


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


def _from_file() -> float:
    from plait.llm.config import config_path

    path = config_path()
    if path is None:
        return DEFAULT_MAX_TIMEOUT_S
    import tomli

    try:
        table = tomli.loads(path.read_text(encoding="utf-8")).get("sandbox", {})
    except (OSError, UnicodeDecodeError, tomli.TOMLDecodeError):
        return DEFAULT_MAX_TIMEOUT_S  # loading the configuration reports the file's problem
    value = table.get("max_timeout_s") if isinstance(table, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    return DEFAULT_MAX_TIMEOUT_S
