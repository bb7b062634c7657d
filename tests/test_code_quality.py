"""The codebase stays ruff-clean and mypy-strict-clean and cites no document it does not hold: CI fails
otherwise, not just a reviewer."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.user_cache import kept_folder

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; install the test extra: pip install -e '.[test]'")
    return found


def test_ruff_clean() -> None:
    result = subprocess.run(
        [_tool("ruff"), "check", "plait", "tests", "bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_clean() -> None:
    # mypy's incremental cache kept in the user's cache: a fresh clone is checked in seconds, not
    # a minute (mypy compares each file's hash where its path or time differ, and checks again
    # what a change reaches)
    kept = kept_folder("mypy")
    cache = ["--cache-dir", str(kept)] if kept is not None else []
    result = subprocess.run([_tool("mypy"), *cache], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


OUTSIDE_DOCUMENT = re.compile(r"SPEC ?§|\bseed 0\d\d\b|\bseed §|\b[Ii]ssue \d+\b")
"""A citation of a document the repository does not hold: its next reader cannot follow it."""


def test_code_cites_no_outside_documents() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "plait").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if OUTSIDE_DOCUMENT.search(line)
    ]
    assert not cited, "say the reason in words, or point to a file under docs/:\n" + "\n".join(cited)
