"""Fixtures of the workbench tests: a real `plait serve` (the command, in its own process) on a
free loopback port, and Debian's Chromium driven by Playwright.

Playwright never downloads a browser here: it launches `/usr/bin/chromium` (`.ci/run` installs
Debian's package when it is missing). Without that browser the tests skip and say so, except in
CI (`CI` set), where the browser is part of the job and its absence fails them.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from plait.testing import HttpRuns, skip_or_fail, wait_until_healthy
from tests.api.api_helpers import free_port
from tests.plait_cli import start_plait

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
IN_CI = "CI must run the workbench tests: .ci/run installs it"
WAIT_MS = 60_000
"""How long a page's assertions and actions wait by default: a bound for a test that would
otherwise hang, generous enough for a host whose cores are all busy."""


@dataclass
class Served(HttpRuns):
    """A running `plait serve`: an HTTP client on it (its runs: `HttpRuns`), its base URL and its
    database."""

    url: str
    db: str

    def import_graph(self, graph: Path | dict[str, Any]) -> dict[str, Any]:
        """Store a graph file, or a graph given as data (sent as its YAML)."""
        source = graph.read_text(encoding="utf-8") if isinstance(graph, Path) else yaml.safe_dump(graph)
        response = self.client.post("/api/graphs/import", json={"source": source})
        assert response.status_code in (200, 201), response.text
        return dict(response.json())


def serve(
    tmp_path: Path, *extra: str, script: Path | None = EXAMPLES / "scripted" / "video_chapters.yaml"
) -> Iterator[Served]:
    """`plait serve` on a fresh SQLite file with the scripted provider (`script=None`: no `--llm`,
    the models of a `--config` in `extra`); stopped after."""
    port = free_port()
    db = f"sqlite:///{tmp_path / 'workbench.db'}"
    log = (tmp_path / "serve.log").open("w")
    process = start_plait(
        "serve",
        "--port",
        str(port),
        "--db",
        db,
        *(["--llm", f"scripted:{script}"] if script is not None else []),
        *extra,
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, alive=lambda: process.poll() is None, log=tmp_path / "serve.log")
        with httpx.Client(base_url=url, timeout=WAIT_MS / 1000) as client:
            yield Served(client=client, url=url, db=db)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Chromium, for the tests of one module. Not for the whole session: while Playwright's sync
    API is active, an event loop runs on the main thread, and any later test that calls
    `asyncio.run` would fail."""
    if not CHROMIUM.exists():
        skip_or_fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)", in_ci=IN_CI)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("playwright is not installed: pip install -e '.[test]'", in_ci=IN_CI)
    from playwright.sync_api import expect

    # A loaded CI host (other processes keeping every core busy) can take many seconds to parse a
    # page's scripts or answer a click: assertions wait generously (each ends as soon as it
    # holds), and a test whose timing is the point passes its own timeout.
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A fresh browser context (its own localStorage) and page; any script error fails the test."""
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(WAIT_MS)
    yield page
    context.close()
    assert errors == [], f"the page threw: {errors}"


@contextmanager
def foreign_site(pages: dict[str, str]) -> Iterator[str]:
    """Another origin on this machine: a web server on another loopback port serving `pages`
    (path → HTML); yields its base URL."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Pages(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.split("?")[0])
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write((body or "not here").encode())

        def log_message(self, *args: Any) -> None:
            pass

    site = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=site.serve_forever, name="foreign-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{site.server_address[1]}"
    finally:
        site.shutdown()
        site.server_close()
