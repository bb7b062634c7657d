"""Fixtures of the API tests: a real server on loopback (see api_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import SCRIPT, Api, free_port, import_graphs, serving

from plait.api import ServerSettings
from plait.store import Store


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT)
    return path


@pytest.fixture
def api(store: Store, script: Path) -> Iterator[Api]:
    """A server on loopback without auth, with the test graphs stored."""
    settings = ServerSettings(port=free_port(), llm=f"scripted:{script}")
    with serving(settings, store) as url, httpx.Client(base_url=url, timeout=30) as client:
        import_graphs(client)
        yield Api(url, client, store, script)
