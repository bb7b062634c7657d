"""The workbench's list pages and its surroundings in the browser: graphs (search, badges,
delete with the server's rules), runs (filters, pause, resume, cancel), the dashboard, errors
shown with their hint, and the token prompt of a server that asks for one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import expect

from tests.api.api_helpers import wait_for
from tests.plait_cli import run_plait
from tests.web.conftest import EXAMPLES, Served, serve

SLOW_SCRIPT = """
responses:
  - {node: chapter_split, output: {chapters: [{title: A, start_sec: 0, end_sec: 5}]}, delay_ms: 600000}
"""
"""A first node that answers after ten minutes: the slow server's runs stay in flight for the
whole of a test however slowly a busy host drives the browser (the server stops them after)."""


def test_the_graphs_page_lists_searches_and_deletes(server: Served, page: Any) -> None:
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    server.import_graph(EXAMPLES / "feedback_triage.yaml")
    page.goto(server.url + "/")
    rows = page.get_by_role("table", name="Stored graphs").locator("tbody tr")
    # the shipped system graphs (video chapters, the chat's designer, knowledge-base ingestion and
    # search, memory extraction), the two imported
    expect(rows).to_have_count(7)
    system = page.locator('tr[data-graph="plait.video_chapters"]')
    expect(system.locator(".badge")).to_have_text("system")
    expect(system.get_by_role("button", name="delete")).to_have_count(0)  # system graphs are read-only

    page.get_by_label("Search graphs").fill("triage")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-graph", "feedback_triage")

    # A graph with runs: the server refuses the plain delete, and the page shows why and how.
    server.start("feedback_triage", _triage_input())
    page.once("dialog", lambda dialog: dialog.accept())
    rows.first.get_by_role("button", name="delete").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("conflict: graph 'feedback_triage' has 1 runs")
    page.get_by_role("button", name="Delete feedback_triage anyway").click()
    expect(page.get_by_role("status")).to_have_text("deleted feedback_triage")
    assert server.client.get("/api/graphs/feedback_triage").status_code == 404

    page.get_by_label("Search graphs").fill("video")
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator('tr[data-graph="video_chapters"]').get_by_role("button", name="delete").click()
    expect(page.get_by_role("status")).to_have_text("deleted video_chapters")
    expect(page.locator('tr[data-graph="video_chapters"]')).to_have_count(0)


def _triage_input() -> dict[str, Any]:
    import yaml

    return dict(yaml.safe_load((EXAMPLES / "inputs" / "feedback_triage.yaml").read_text()))


@pytest.fixture
def slow_server(tmp_path: Path) -> Iterator[Served]:
    script = tmp_path / "slow.yaml"
    script.write_text(SLOW_SCRIPT)
    yield from serve(tmp_path, script=script)


def test_the_runs_page_filters_pauses_resumes_and_cancels(slow_server: Served, page: Any) -> None:
    server = slow_server
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    first = server.start("video_chapters", {"transcript": "one"})
    second = server.start("video_chapters", {"transcript": "two"})
    # the page shows the list as it was when it loaded: open it once the first run is running
    wait_for(lambda: server.run(first)["status"] == "running", timeout=120, what="the first run to be running")
    page.goto(server.url + "/#/runs")
    table = page.get_by_role("table", name="Runs")
    expect(table.locator("tbody tr")).to_have_count(2)

    row = table.locator(f'tr[data-run="{first}"]')
    expect(row.locator(".pill")).to_have_text("running")
    row.get_by_role("button", name="pause").click()
    expect(row.locator(".pill")).to_have_text("paused")
    assert server.wait_status(first, "paused", timeout=120)["status"] == "paused"

    page.get_by_label("Status").select_option("paused")
    expect(table.locator("tbody tr")).to_have_count(1)
    expect(page).to_have_url(f"{server.url}/#/runs?status=paused")
    table.locator(f'tr[data-run="{first}"]').get_by_role("button", name="resume").click()
    page.get_by_label("Status").select_option("")
    other = server.start("plait.video_chapters", {"transcript": "three"})
    choices = page.get_by_label("Graph", exact=True).locator("option")
    expect(choices.filter(has_text="(video_chapters)")).to_have_count(1)  # a choice, not free text
    expect(choices.filter(has_text="(plait.video_chapters)")).to_have_count(1)
    page.get_by_label("Graph", exact=True).select_option(label="Video chapter analysis (video_chapters)")
    expect(table.locator("tbody tr")).to_have_count(2)  # the system graph's run is another graph's
    expect(table.locator(f'tr[data-run="{other}"]')).to_have_count(0)
    row = table.locator(f'tr[data-run="{second}"]')
    row.get_by_role("button", name="cancel").click()
    expect(row.locator(".pill")).to_have_text("cancelled")
    assert server.run(second)["status"] == "cancelled"
    assert server.run(first)["status"] in ("pending", "running")


def test_the_dashboard_shows_executing_runs_and_failures(slow_server: Served, page: Any) -> None:
    server = slow_server
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    running = server.start("video_chapters", {"transcript": "one"})
    page.goto(server.url + "/#/dashboard")
    active = page.get_by_test_id("active-runs")
    expect(active.locator(".big")).to_have_text("1")
    expect(active.get_by_role("link")).to_have_text(running[:8])
    expect(page.get_by_text("scripted", exact=False).first).to_be_visible()


def test_an_unknown_run_shows_the_servers_error_not_a_blank_page(server: Served, page: Any) -> None:
    page.goto(server.url + "/#/runs/0123456789ab")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("not_found")
    expect(alert).to_contain_text("0123456789ab")


def test_a_server_that_asks_for_a_token_gets_one_from_the_prompt(tmp_path: Path, page: Any) -> None:
    db = f"sqlite:///{tmp_path / 'workbench.db'}"
    created = run_plait("token", "create", "--name", "browser", "--db", db, "--json", check=True)
    token = json.loads(created.stdout)["token"]
    served = serve(tmp_path, "--require-auth")
    server = next(served)
    try:
        page.goto(server.url + "/")
        prompt = page.get_by_label("Token")
        expect(prompt).to_be_visible()
        prompt.fill("not-the-token")
        page.get_by_role("button", name="Use token").click()
        expect(page.get_by_role("alert")).to_contain_text("unauthorized")  # the list is refused...
        expect(page.get_by_label("Token")).to_be_visible()  # ...and the prompt asks again
        page.get_by_label("Token").fill(token)
        page.get_by_role("button", name="Use token").click()
        expect(page.locator('tr[data-graph="plait.video_chapters"]')).to_be_visible()
        assert page.evaluate("localStorage.getItem('plait.token')") == token
    finally:
        next(served, None)


def test_a_node_shows_its_attempts_and_tool_rounds(tmp_path: Path, page: Any) -> None:
    """The inspector lists each attempt (where it went, its time, its tokens) and the tool calls
    the model made, round by round, with the real MCP time server's answer."""
    served = serve(
        tmp_path, "--config", str(EXAMPLES / "mcp.toml"), script=EXAMPLES / "scripted" / "meeting_times.yaml"
    )
    server = next(served)
    try:
        server.import_graph(EXAMPLES / "meeting_times.yaml")
        run_id = server.start("meeting_times", yaml.safe_load((EXAMPLES / "inputs" / "meeting_times.yaml").read_text()))
        assert server.wait_status(run_id, "completed", timeout=60)["status"] == "completed"
        page.goto(f"{server.url}/#/runs/{run_id}")
        page.locator('.box[data-node="scheduler"]').click()
        panel = page.get_by_test_id("node-panel")
        panel.get_by_text("Attempts (2)").click()
        attempts = panel.get_by_role("table", name="Attempts")
        expect(attempts.locator("tbody tr")).to_have_count(2)
        expect(attempts.locator('[data-attempt="1"]')).to_contain_text("scripted")
        panel.get_by_text("Tool rounds (1)").click()
        rounds = panel.get_by_role("list", name="Tool rounds")
        expect(rounds).to_contain_text("convert_time")
        expect(rounds).to_contain_text("Asia/Kolkata")
        expect(rounds).to_contain_text("note_attendees")
    finally:
        next(served, None)


SECRET = "sk-test-0123456789abcdef-never-shown"
CONFIG = """
[[providers]]
id = "remote"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "PLAIT_TEST_WORKBENCH_KEY"
max_concurrency = 4
rpm = 600
models = [{ name = "chat-model" }]

[[providers]]
id = "demo"
kind = "scripted"
file = "SCRIPT"

[roles]
chat = ["demo/scripted", "remote/chat-model"]
"""


def test_the_dashboard_shows_the_configuration_but_never_a_secret(
    tmp_path: Path, page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Providers, roles and MCP servers as configured, read-only: the key's variable name and
    whether it is set, never its value (the server has it in its environment)."""
    monkeypatch.setenv("PLAIT_TEST_WORKBENCH_KEY", SECRET)
    config = tmp_path / "plait.toml"
    script = EXAMPLES / "scripted" / "video_chapters.yaml"
    mcp = (EXAMPLES / "mcp.toml").read_text()
    config.write_text(CONFIG.replace("SCRIPT", str(script)) + mcp)
    served = serve(tmp_path, "--config", str(config))
    server = next(served)
    try:
        page.goto(f"{server.url}/#/dashboard")
        providers = page.get_by_role("table", name="Providers")
        expect(providers).to_contain_text("remote")
        expect(providers).to_contain_text("PLAIT_TEST_WORKBENCH_KEY (set)")
        expect(providers).to_contain_text("600 rpm")
        expect(page.get_by_role("table", name="Roles")).to_contain_text("demo/scripted")
        expect(page.get_by_role("table", name="MCP servers")).to_contain_text("mcp_server_time")
        assert SECRET not in page.content()
        assert SECRET not in server.client.get("/api/providers").text
    finally:
        next(served, None)


def test_a_run_parked_by_a_wait_says_when_it_continues(server: Served, page: Any) -> None:
    source = (
        "plait: 1\nid: later\nnodes:\n  - {id: pause, type: WAIT, delay_s: 600}\n"
        "  - {id: after, type: TRANSFORM, transform_expr: '({done: true})'}\n"
        "edges:\n  - {source: pause, target: after}\n"
    )
    assert server.client.post("/api/graphs", json={"source": source}).status_code == 201
    run_id = server.start("later", {})
    parked = server.wait_status(run_id, "paused")
    assert parked["wake_at"] is not None
    page.goto(f"{server.url}/#/runs/{run_id}")
    expect(page.get_by_test_id("wake-at")).to_contain_text("Parked by a WAIT node: the run continues at")
    expect(page.locator('.box[data-node="pause"]')).to_have_attribute("data-status", "pending")
