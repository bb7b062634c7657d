"""Schema versions: semantic versions (`2.1.0`), and the patterns migrations match them with (`1.x.x`)."""

from __future__ import annotations

import re

SEMVER_RE = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
VERSION_PATTERN_RE = re.compile(r"^(\d+|x)\.(\d+|x)\.(\d+|x)$")
