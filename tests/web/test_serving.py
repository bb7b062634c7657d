"""How the server hands out the workbench: the page at `/` (never cached), hashed assets (cached
for good), a plain explanation when the bundle is missing, and nothing fetched from elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from fastapi import FastAPI
from fastapi.testclient import TestClient

from plait.web import STATIC_DIR, mount
from tests.web.conftest import Served


def test_the_page_and_its_assets_are_served(server: Served) -> None:
    page = server.client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-cache"
    asset = next((STATIC_DIR / "assets").glob("index-*.js"))
    response = server.client.get(f"/assets/{asset.name}")
    assert response.status_code == 200
    assert response.content == asset.read_bytes()
    assert "immutable" in response.headers["cache-control"]
    assert server.client.get("/assets/nothing-here.js").status_code == 404


def test_without_the_bundle_the_page_says_how_to_build_it(tmp_path: Path) -> None:
    app = FastAPI()
    mount(app, tmp_path / "static")
    response = TestClient(app).get("/")
    assert response.status_code == 503
    assert "npm run build" in response.text
    assert "/docs" in response.text


def test_the_page_fetches_nothing_from_another_host(server: Served, page: Any) -> None:
    """No CDN: every request the page makes (scripts, styles, fonts, the layout worker, API
    calls) goes to the server it came from."""
    hosts: list[str] = []
    page.on("request", lambda request: hosts.append(urlparse(request.url).netloc))
    server.import_graph(Path(__file__).resolve().parents[2] / "examples" / "video_chapters.yaml")
    page.goto(server.url + "/#/graphs/video_chapters")
    page.locator('.box[data-node="chapter_split"]').wait_for()
    page.goto(server.url + "/#/dashboard")
    page.get_by_role("heading", name="Provider pool").wait_for()
    own = urlparse(server.url).netloc
    assert hosts, "the page made no request at all"
    assert {h for h in hosts if h and h != own} == set()
