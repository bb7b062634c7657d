"""Fixtures of the command tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def folder_store(tmp_path: Path) -> Path:
    """A `.plait/` folder in the test's folder: the commands run there use that folder's own
    store, which a test then opens directly (`tmp_path / ".plait" / "plait.db"`)."""
    folder = tmp_path / ".plait"
    folder.mkdir(exist_ok=True)
    return folder / "plait.db"
