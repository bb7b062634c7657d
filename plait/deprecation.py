"""Old names kept working for a while: each use warns and says the new name (docs/changes.md)."""

from __future__ import annotations

import warnings
from typing import TypeVar

T = TypeVar("T")


def deprecated_alias(old: str, new: str, value: T) -> T:
    """`value`, read under its old name `old`: warn that it is now `new`."""
    warnings.warn(f"`{old}` is deprecated: use `{new}` (see docs/changes.md)", DeprecationWarning, stacklevel=3)
    return value
