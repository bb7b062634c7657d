"""Schema versions: semantic versions (`2.1.0`), and the patterns migrations match them with (`1.x.x`)."""

from __future__ import annotations

import re

SEMVER_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
VERSION_PATTERN_RE = re.compile(r"^(\d+|x)\.(\d+|x)\.(\d+|x)$")

Version = tuple[int, int, int]


def semver(version: str) -> Version | None:
    """(major, minor, patch) of a semantic version, or None when `version` is not one."""
    match = SEMVER_RE.match(version)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def major(version: str) -> int | None:
    """The major number of a semantic version, or None when `version` is not one."""
    parsed = semver(version)
    return None if parsed is None else parsed[0]
