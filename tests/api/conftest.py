"""Fixtures of the API tests: a real server on loopback (see api_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_helpers import SCRIPT, Api, import_graphs

from plait.store import Store
from plait.testing import served_app


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT)
    return path


@pytest.fixture
def api(store: Store, script: Path) -> Iterator[Api]:
    """A server on loopback without auth, with the test graphs stored."""
    with served_app(store=store, llm=f"scripted:{script}") as served, served.client() as client:
        import_graphs(client)
        yield Api(client=client, url=served.url, store=store, script=script)
