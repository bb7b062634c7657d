"""Scheduling decisions on the run page, against a real `plait serve`: a decision the engine
recorded on a node (queued for the CPU, with the probe it was made on) shows in that node's
panel and in no other, and a run the scheduler paused because every provider was exhausted
says so in a banner above the graph, with what resuming does."""

from __future__ import annotations

import time
from typing import Any

from playwright.sync_api import expect

from plait.store import Store
from plait.store.decisions import Decision
from tests.web.conftest import EXAMPLES, Served
from tests.web.test_accessibility import violations

PROBE = {"cpu_percent": 93.4, "memory_percent": 41.0, "disk_free_gb": 12.5, "capacity_percent": 75.0, "at": 0.0}


def test_a_nodes_decisions_show_in_its_panel_and_a_pause_in_a_banner(server: Served, page: Any) -> None:
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    run_id = server.start("video_chapters", {"transcript": "We build a birdhouse."})
    run = server.wait_status(run_id, "paused")
    split = next(n for n in run["nodes"] if n["node_id"] == "chapter_split")
    now = time.time()
    queued = "CPU 93 % busy, over 80 %"
    with Store(server.db) as store:
        store.decisions.add(Decision(run_id, "queue", "cpu", queued, PROBE, node_run_id=split["id"], at=now - 2))
        store.decisions.add(Decision(run_id, "execute", "cpu", "started after queueing 5.0 s", PROBE,
                                     node_run_id=split["id"], at=now - 1))  # fmt: skip
        store.decisions.add(Decision(run_id, "pause", "providers", "no provider can serve a model call now",
                                     {**PROBE, "reachable": {"remote": False, "demo": True}}, at=now))  # fmt: skip
    listed = server.run(run_id)["decisions"]
    assert [(d["action"], d["node_id"]) for d in listed] == [
        ("queue", "chapter_split"), ("execute", "chapter_split"), ("pause", None)
    ]  # fmt: skip

    page.goto(f"{server.url}/#/runs/{run_id}")
    banner = page.get_by_test_id("paused-banner")
    expect(banner).to_contain_text("Paused: every provider is exhausted.")
    expect(banner).to_contain_text("no provider can serve a model call now")
    expect(banner).to_contain_text("Resume continues the run once a provider can serve it again")

    # The run's own decision is in the run's summary, with the reachability the probe saw.
    summary = page.get_by_role("table", name="Scheduling decisions on the run")
    expect(summary.locator("tbody tr")).to_have_count(1)
    expect(summary).to_contain_text("unreachable remote")

    # The node's decisions: in its panel, each with its rule, why and the probe.
    page.locator('.box[data-node="chapter_split"]').click()
    panel = page.get_by_test_id("node-panel")
    table = panel.get_by_role("table", name="Scheduling decisions")
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td").nth(1)).to_have_text("queue")
    expect(rows.nth(0).locator("td").nth(2)).to_have_text("cpu")
    expect(rows.nth(0).locator("td").nth(3)).to_have_text(queued)
    expect(rows.nth(0).locator("td").nth(4)).to_have_text(
        "CPU 93 % · memory 41 % · disk 12.50 GB free · capacity 75 % free"
    )
    expect(rows.nth(1).locator("td").nth(1)).to_have_text("started")
    assert violations(page) == []

    # Another node had no decision: its panel has none.
    page.locator('.box[data-node="review"]').click()
    expect(page.get_by_test_id("node-panel")).to_contain_text("review")
    expect(page.get_by_role("table", name="Scheduling decisions")).to_have_count(0)
