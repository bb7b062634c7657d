"""The basics of accessibility on every page of the workbench: axe-core (the engine browsers'
own audits use) finds no violation of WCAG 2 A/AA rules (labels, names, contrast, landmarks,
roles), and the keyboard reaches the main navigation first, in order."""

from __future__ import annotations

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe

from plait.store import Store
from plait.store.memory import NewFact
from plait.testing import wait_for
from tests.web.conftest import EXAMPLES, Served

RULES = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}


def violations(page: Any) -> list[str]:
    results = Axe().run(page, options=RULES)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:4]}"
        for v in results.response["violations"]
    ]


@pytest.fixture
def story(server: Served) -> tuple[Served, str, str, str]:
    """A server with the video-chapters graph, a run paused at its review, a schedule of the
    graph (9:00 on weekdays), and a fact a chat remembers from that run."""
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    run_id = server.start("video_chapters", {"transcript": "We build a birdhouse."})
    server.wait_status(run_id, "paused")
    made = server.client.post(
        "/api/schedules", json={"graph": "video_chapters", "cron": "0 9 * * 1-5", "input": {"transcript": "Daily."}}
    )
    assert made.status_code == 201, made.text
    with Store(server.db) as store:
        fact = NewFact("ada", "lives in", "paris", "Ada lives in Paris.", ("ada", "paris"))
        remembered = store.memory.add("chat:s1", [fact], source={"messages": [3], "run_id": run_id}, by="memory")
    return server, run_id, str(made.json()["id"]), remembered[0].id


@pytest.mark.parametrize(
    ("route", "ready"),
    [
        ("#/graphs", "table[aria-label='Stored graphs'] tbody tr"),
        ("#/graphs/video_chapters", ".box[data-node='chapter_split']"),
        ("#/graphs/video_chapters?chat=new", ".box[data-node='chapter_split']"),  # the chat beside the canvas
        ("#/chat", "aside[aria-label='Chat'] textarea"),
        ("#/runs", "table[aria-label='Runs'] tbody tr"),
        ("#/runs/{run}", ".box[data-node='review']"),
        ("#/schedules", "table[aria-label='Schedules'] tbody tr"),
        ("#/schedules/{schedule}", "dl.facts"),
        ("#/dashboard", "[data-testid='active-runs']"),
        ("#/scripts", "li[data-template='plait.summary']"),
        ("#/scripts/plait.summary", ".cm-content[aria-label='Prompt script']"),
        ("#/knowledge", "form[aria-labelledby='new-kb']"),
        ("#/memory/chat:s1?fact={fact}", "form[aria-labelledby='correct-fact']"),  # the facts, a history, the form
        ("#/evaluations/{evaluation}", "table[aria-label='Fields of case #1']"),  # verdict, promotion, cases
        ("#/skills", "table[aria-label='Skills']"),
        ("#/settings?tab=providers", "table[aria-label='Providers']"),
        ("#/settings?tab=scheduling", "[role='group'][aria-label='Resources']"),
    ],
)
def test_no_accessibility_violation(story: tuple[Served, str, str, str], page: Any, route: str, ready: str) -> None:
    server, run_id, schedule_id, fact_id = story
    evaluation_id = evaluated(server) if "{evaluation}" in route else ""
    page.goto(f"{server.url}/{route.format(run=run_id, schedule=schedule_id, fact=fact_id, evaluation=evaluation_id)}")
    page.locator(ready).first.wait_for()
    page.wait_for_timeout(300)  # let the canvas settle (fit to view, edge labels)
    assert violations(page) == []


def evaluated(server: Served) -> str:
    """A finished evaluation of the video-chapters graph on a set of one case: a review that moved
    a chapter boundary (so a field fails, and the gate cannot pass on one case)."""
    run_id = server.start("video_chapters", {"transcript": "We build a birdhouse."})
    server.wait_status(run_id, "paused")
    chapters = [{"title": "Introduction", "start_sec": 0, "end_sec": 10},
                {"title": "Cutting the pieces", "start_sec": 10, "end_sec": 70},
                {"title": "Assembly and painting", "start_sec": 70, "end_sec": 140}]  # fmt: skip
    reviewed = server.client.post(f"/api/runs/{run_id}/nodes/review/review", json={"value": {"chapters": chapters}})
    assert reviewed.status_code == 200, reviewed.text
    server.wait_status(run_id, "completed")
    built = server.client.post("/api/graphs/video_chapters/eval-sets", json={"name": "chapters"})
    assert built.status_code == 201, built.text
    started = server.client.post("/api/graphs/video_chapters/evaluations", json={"set": "chapters"})
    assert started.status_code == 202, started.text
    evaluation_id = str(started.json()["id"])
    wait_for(
        lambda: server.client.get(f"/api/evaluations/{evaluation_id}").json()["status"] == "completed",
        timeout=120,
        what="the evaluation to complete",
    )
    return evaluation_id


def test_the_keyboard_reaches_the_navigation_first(server: Served, page: Any) -> None:
    page.goto(server.url + "/")
    page.locator("table[aria-label='Stored graphs']").wait_for()
    reached = []
    for _ in range(6):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("document.activeElement.textContent.trim()"))
    assert reached == ["Plait", "Graphs", "Runs", "Schedules", "Dashboard", "Scripts"]
