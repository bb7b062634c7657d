"""The store a person is looking at is named where they look: the first line `plait serve` writes,
the workbench's header, and the runs page when it has no runs to list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import Served


def test_serve_and_the_workbench_name_the_store(server: Served, page: Any, tmp_path: Path) -> None:
    first = (tmp_path / "serve.log").read_text().splitlines()[0]
    assert first.startswith("plait: serving http://127.0.0.1:"), first
    assert first.endswith(f"; store {server.db}"), first

    page.goto(server.url + "/#/runs")
    expect(page.locator("header .store")).to_contain_text(server.db)
    expect(page.get_by_text("No runs yet in the store")).to_contain_text(server.db)
