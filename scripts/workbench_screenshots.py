"""Take the screenshots of docs/workbench.md: a real `plait serve` on a throwaway database, the
video-chapters story played through the HTTP API, each page shot in Debian's Chromium (and a
graph built from nothing on the canvas, a schedule's form, the script editor in expert mode).

    .venv/bin/python scripts/workbench_screenshots.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images"
PORT = 8799


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{Path(folder) / 'shots.db'}"
        script = ROOT / "examples" / "scripted" / "video_chapters.yaml"
        server = subprocess.Popen(
            [sys.executable, "-m", "plait", "serve", "--port", str(PORT), "--db", db, "--llm", f"scripted:{script}"],
            cwd=folder,
        )
        try:
            shoot(play_story(f"http://127.0.0.1:{PORT}"), f"http://127.0.0.1:{PORT}")
        finally:
            server.terminate()
            server.wait(timeout=15)


def play_story(url: str) -> str:
    """Import, run, review, override (stale downstream) and a second run; the first run's id."""
    for _ in range(100):
        try:
            httpx.get(f"{url}/api/health")
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    api = httpx.Client(base_url=url, timeout=10)
    api.post("/api/graphs/import", json={"source": (ROOT / "examples" / "video_chapters.yaml").read_text()})
    transcript = {"transcript": "We build a birdhouse: cut the pieces, assemble, paint."}
    run_id = api.post("/api/runs", json={"graph": "video_chapters", "input": transcript}).json()["run_id"]
    wait(api, run_id, "paused")
    api.post(f"/api/runs/{run_id}/nodes/review/review", json={"approve": True})
    wait(api, run_id, "completed")
    corrected = {"text": "We build a birdhouse.", "language": "en"}
    api.post(f"/api/runs/{run_id}/nodes/transcribe/override", json={"value": corrected, "policy": "INVALIDATE"})
    other = api.post("/api/runs", json={"graph": "video_chapters", "input": transcript}).json()["run_id"]
    wait(api, other, "paused")
    return str(run_id)


def wait(api: httpx.Client, run_id: str, status: str) -> None:
    for _ in range(200):
        run = api.get(f"/api/runs/{run_id}").json()
        if run["status"] == status and not run["executing_here"]:
            return
        time.sleep(0.05)
    raise SystemExit(f"run {run_id} did not become {status}")


def shoot(run_id: str, url: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 800})
        page.goto(f"{url}/#/graphs")
        page.get_by_role("table", name="Stored graphs").wait_for()
        page.screenshot(path=OUT / "workbench-graphs.png")
        page.goto(f"{url}/#/graphs/video_chapters")
        page.locator('.box[data-node="chapter_split"]').wait_for()
        page.get_by_role("tab", name="YAML").click()
        page.wait_for_timeout(300)
        page.screenshot(path=OUT / "workbench-canvas.png")
        page.goto(f"{url}/#/runs/{run_id}")
        page.locator('.box[data-node="chapter_split"]').click()
        page.get_by_test_id("node-panel").get_by_role("button", name="Override…").click()
        page.get_by_label("Downstream policy").select_option("RERUN_ALL")
        page.wait_for_timeout(300)
        page.screenshot(path=OUT / "workbench-run.png")
        page.get_by_role("tab", name="Ledger").click()
        page.wait_for_timeout(300)
        page.screenshot(path=OUT / "workbench-ledger.png")
        page.goto(f"{url}/#/runs")
        page.get_by_role("table", name="Runs").wait_for()
        page.screenshot(path=OUT / "workbench-runs.png")
        page.goto(f"{url}/#/dashboard")
        page.get_by_role("heading", name="Provider pool").wait_for()
        page.wait_for_timeout(300)
        page.screenshot(path=OUT / "workbench-dashboard.png")
        shoot_new_graph(page, url)
        page.goto(f"{url}/#/schedules")
        form = page.get_by_role("form", name="New schedule")
        form.get_by_label("Graph", exact=True).select_option(label="Video chapter analysis (video_chapters)")
        form.locator('textarea[name="transcript"]').wait_for()
        page.screenshot(path=OUT / "workbench-schedules.png")
        page.goto(f"{url}/#/scripts/plait.summary")
        page.get_by_label("Expert mode").check()
        page.get_by_role("button", name="Preview", exact=True).click()
        page.get_by_test_id("preview-prompt").wait_for()
        page.screenshot(path=OUT / "workbench-scripts.png")
        browser.close()


def shoot_new_graph(page: Any, url: str) -> None:
    """A graph from nothing: the New graph form, then its canvas with the palette and an edge's
    schema in the form."""
    page.goto(f"{url}/#/new-graph")
    form = page.get_by_role("form", name="New graph")
    form.get_by_label("Name", exact=True).fill("Ticket triage")
    form.get_by_label("Description", exact=True).fill("Labels a ticket and says what to fix.")
    page.screenshot(path=OUT / "workbench-new-graph.png")
    form.get_by_role("button", name="Create and open the canvas").click()
    palette = page.get_by_role("navigation", name="Node types")
    for node_type in ("LLM_CALL", "TRANSFORM"):
        palette.get_by_role("button", name=f"Add {node_type}").click()
    source = page.locator('.box[data-node="llm_call_1"] .react-flow__handle.source')
    source.drag_to(page.locator('.box[data-node="transform_1"] .react-flow__handle.target'))
    page.locator('.react-flow__edge[data-id="llm_call_1__transform_1"]').click(force=True)
    page.get_by_role("button", name="New schema for this edge").click()
    page.wait_for_timeout(300)
    page.screenshot(path=OUT / "workbench-new-canvas.png")


if __name__ == "__main__":
    main()
