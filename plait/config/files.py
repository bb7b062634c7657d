"""Where `plait.toml` is: `--config FILE`, else `$PLAIT_CONFIG`, else `./plait.toml` if it exists."""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_ENV = "PLAIT_CONFIG"
DEFAULT_FILE = "plait.toml"


def config_path(explicit: str | None = None) -> Path | None:
    """`--config`, else `$PLAIT_CONFIG`, else `./plait.toml` if it exists."""
    if explicit:
        return Path(explicit)
    from_env = os.environ.get(CONFIG_ENV)
    if from_env:
        return Path(from_env)
    default = Path(DEFAULT_FILE)
    return default if default.is_file() else None
