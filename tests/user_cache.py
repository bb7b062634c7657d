"""A folder of the user's cache for what the tests can keep between runs and checkouts (a
download, mypy's incremental cache): a fresh clone on the same machine starts warm."""

from __future__ import annotations

import os
from pathlib import Path


def kept_folder(*parts: str) -> Path | None:
    """`$XDG_CACHE_HOME/plait-tests/PARTS`, else `~/.cache/plait-tests/PARTS`, made if missing;
    None when it cannot be made or written."""
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        folder = base.joinpath("plait-tests", *parts)
        folder.mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):
        return None
    return folder if os.access(folder, os.W_OK) else None
