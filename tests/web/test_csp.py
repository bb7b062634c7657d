"""The workbench and /docs work under the Content-Security-Policy the server sends with every
response (no inline script, no `eval`, nothing from elsewhere), and no page of the server
renders inside another site's frame. Chromium reports each policy violation as a
`securitypolicyviolation` event (and, in workers too, as a console error): none may happen."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.conftest import EXAMPLES, Served, foreign_site, serve

WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const where = `${e.sourceFile}:${e.lineNumber}`;
  window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} (${where})`);
});
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, str]]:
    """One `plait serve` for the module, with a run of video_chapters waiting at its review."""
    for server in serve(tmp_path_factory.mktemp("csp")):
        server.import_graph(EXAMPLES / "video_chapters.yaml")
        run_id = server.start("video_chapters", {"transcript": "We build a birdhouse."})
        server.wait_status(run_id, "paused")
        yield server, run_id


@pytest.fixture
def watched(page: Any) -> tuple[Any, list[str]]:
    """The page, with every policy violation it (or a worker of it) reports collected."""
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)
    page.add_init_script(WATCH)
    return page, console


def _violations(page: Any, console: list[str]) -> list[str]:
    return [*page.evaluate("window.__violations"), *console]


def test_the_workbench_works_under_its_policy(served: tuple[Served, str], watched: tuple[Any, list[str]]) -> None:
    server, run_id = served
    page, console = watched
    policy = server.client.get("/").headers["content-security-policy"]
    assert "script-src 'self';" in policy  # no inline script, no eval
    assert "frame-ancestors 'none'" in policy
    seen: list[str] = []
    for route, ready in [
        ("#/graphs", lambda: page.get_by_role("table", name="Stored graphs").wait_for()),
        ("#/graphs/video_chapters", lambda: page.locator('.box[data-node="chapter_split"]').wait_for()),  # elk
        ("#/runs", lambda: page.locator(f'tr[data-run="{run_id}"]').wait_for()),
        ("#/dashboard", lambda: page.get_by_role("heading", name="Provider pool").wait_for()),
        ("#/scripts", lambda: expect(page.get_by_role("textbox", name="Prompt script")).to_be_visible()),
        ("#/schedules", lambda: page.get_by_role("heading", name="Schedules").first.wait_for()),
    ]:
        page.goto(f"{server.url}/{route}")
        ready()
        seen += [f"{route}: {v}" for v in _violations(page, console)]
    # A run: the canvas, the node panel, the override editor (CodeMirror) checking a value
    # against the edge's schema while it is typed (the schema checker compiles no code).
    page.goto(f"{server.url}/#/runs/{run_id}")
    page.locator('.box[data-node="chapter_split"]').click()
    page.get_by_test_id("node-panel").get_by_role("button", name="Override…").click()
    page.get_by_label("Corrected value (JSON)", exact=True).fill(json.dumps({"chapters": "none"}))
    listed = page.get_by_label("Schema errors").locator("li")
    expect(listed.first).to_contain_text("'none' is not of type 'array'")
    seen += [f"run page: {v}" for v in _violations(page, console)]
    assert seen == []


def test_the_api_docs_work_under_their_policy(served: tuple[Served, str], watched: tuple[Any, list[str]]) -> None:
    server, _ = served
    page, console = watched
    page.goto(f"{server.url}/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Plait")
    expect(page.locator(".opblock").first).to_be_visible()
    page.locator(".opblock-summary").first.click()  # an operation opens (Swagger UI renders its parts)
    expect(page.locator(".opblock-body").first).to_be_visible()
    policy = server.client.get("/docs").headers["content-security-policy"]
    assert "script-src 'self' 'sha256-" in policy  # Swagger UI's one inline script, by its hash
    assert "'unsafe-eval'" not in policy
    assert _violations(page, console) == []


def test_no_page_renders_inside_another_sites_frame(served: tuple[Served, str], page: Any) -> None:
    server, run_id = served
    framing = "".join(
        f'<iframe src="{server.url}{path}" width="400" height="300"></iframe>'
        for path in ("/", f"/#/runs/{run_id}", "/docs", "/api/health")
    )
    with foreign_site({"/": f"<!doctype html><title>elsewhere</title>{framing}"}) as site:
        statuses: dict[str, int] = {}
        page.on("response", lambda r: statuses.setdefault(r.url, r.status))
        page.goto(site + "/")
        page.wait_for_load_state("load")
        frames = [f for f in page.frames if f != page.main_frame]
        assert len(frames) == 4
        assert statuses.get(server.url + "/") == 200  # the server answered: the browser refused to show it
        for frame in frames:
            assert not frame.url.startswith(server.url), f"{frame.url} rendered inside another site's page"
    for path in ("/", "/docs", "/api/health"):
        headers = server.client.get(path).headers
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"


def test_assets_come_with_the_policy_too(served: tuple[Served, str]) -> None:
    server, _ = served
    asset = next((Path(__file__).resolve().parents[2] / "plait" / "web" / "static" / "assets").glob("index-*.js"))
    headers = server.client.get(f"/assets/{asset.name}").headers
    assert headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
