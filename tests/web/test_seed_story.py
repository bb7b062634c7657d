"""The seed story in the browser, against a real `plait serve`: import the video-chapters graph,
run it on the scripted provider, review at the pause, override a node with RERUN_ALL, see the
stale and rerun colours, roll back a field in the ledger view, and diff two runs."""

from __future__ import annotations

import json
import re
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import EXAMPLES, Served

GRAPH = EXAMPLES / "video_chapters.yaml"


def node(page: Any, node_id: str) -> Any:
    return page.locator(f'.box[data-node="{node_id}"]')


def set_json(page: Any, label: str, value: Any) -> None:
    """Replace the text of the CodeMirror editor labelled `label`."""
    editor = page.get_by_label(label)
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    editor.fill(json.dumps(value))


def test_the_seed_story(server: Served, page: Any) -> None:
    # 1. Import the graph by choosing its file on the Graphs page.
    page.goto(server.url + "/")
    page.get_by_label("Import a graph file").set_input_files(str(GRAPH))
    expect(page.get_by_role("status")).to_contain_text("stored video_chapters version 1")
    row = page.locator('tr[data-graph="video_chapters"]')
    expect(row.locator(".badge")).to_have_text("user")

    # 2. Run it from the canvas: the form comes from the graph's input_schema.
    row.get_by_role("link", name="Video chapter analysis").click()
    expect(node(page, "chapter_split")).to_be_visible()
    page.get_by_role("button", name="Start a run…").click()
    page.locator('textarea[name="transcript"]').fill("We build a birdhouse: cut, assemble, paint.")
    page.get_by_role("button", name="Start", exact=True).click()
    expect(page).to_have_url(re.compile(r"#/runs/[0-9a-f-]{36}$"))
    run_id = page.url.rsplit("/", 1)[1]

    # 3. The run pauses at the review; the inspector says so and the review panel approves.
    expect(page.get_by_test_id("run-status")).to_have_text("paused")
    expect(node(page, "chapter_split")).to_have_attribute("data-status", "completed")
    expect(node(page, "review")).to_have_attribute("data-status", "waiting")  # for a person, not unstarted
    page.get_by_role("status").get_by_role("button", name="Check chapters").click()
    review = page.get_by_role("region", name="Review")
    expect(review).to_contain_text("Check the 3 chapters")
    review.get_by_role("button", name="Approve").click()
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
    expect(node(page, "subtitles")).to_have_attribute("data-status", "completed")
    assert server.run(run_id)["status"] == "completed"

    # 4. Override chapter_split with RERUN_ALL; the editor checks the edge schema as you type.
    node(page, "chapter_split").click()
    panel = page.get_by_test_id("node-panel")
    panel.get_by_role("button", name="Override…").click()
    set_json(page, "Corrected value (JSON)", {"chapters": [{"title": "Whole video", "start_sec": -1}]})
    errors = page.get_by_label("Schema errors")
    expect(errors).to_contain_text("chapters/0/start_sec: -1 is less than the minimum of 0")
    expect(errors).to_contain_text("chapters/0: 'end_sec' is a required property")
    expect(panel.get_by_role("button", name="Save override")).to_be_disabled()
    corrected = {"chapters": [{"title": "Whole video", "start_sec": 0, "end_sec": 140}]}
    set_json(page, "Corrected value (JSON)", corrected)
    expect(errors).to_have_count(0)
    panel.get_by_label("Downstream policy").select_option("RERUN_ALL")
    expect(page.get_by_test_id("policy-preview")).to_have_text("Reruns: clip_points, review, subtitles")
    panel.get_by_role("button", name="Save override").click()

    # 5. The overridden node and what reran: the review waits again (a person checks the new value).
    expect(node(page, "chapter_split")).to_have_attribute("data-status", "overridden")
    expect(page.get_by_test_id("run-status")).to_have_text("paused")
    expect(node(page, "review")).to_have_attribute("data-status", "waiting")  # for a person, not unstarted
    expect(node(page, "clip_points")).to_have_attribute("data-status", "completed")
    clip_runs = [n for n in server.run(run_id)["nodes"] if n["node_id"] == "clip_points"]
    assert [n["activation"] for n in clip_runs] == [1, 2]
    page.get_by_role("status").get_by_role("button", name="Check chapters").click()
    page.get_by_role("region", name="Review").get_by_role("button", name="Approve").click()
    expect(page.get_by_test_id("run-status")).to_have_text("completed")

    # ...and a stale one: override transcribe, keeping its readers as they were but marked stale.
    node(page, "transcribe").click()
    page.get_by_test_id("node-panel").get_by_role("button", name="Override…").click()
    set_json(page, "Corrected value (JSON)", {"text": "A shorter transcript.", "language": "en"})
    preview = page.get_by_test_id("policy-preview")
    expect(preview).to_have_text(
        "Marks stale: chapter_split. Stale through them until they rerun: clip_points, review, subtitles"
    )
    page.get_by_label("Downstream policy").select_option("RERUN")
    expect(preview).to_have_text("Reruns: chapter_split. Marks stale: clip_points, review, subtitles")
    page.get_by_label("Downstream policy").select_option("INVALIDATE")
    page.get_by_test_id("node-panel").get_by_role("button", name="Save override").click()
    expect(node(page, "chapter_split")).to_have_attribute("data-status", "stale")
    expect(node(page, "subtitles")).to_have_attribute("data-status", "stale")  # through chapter_split
    expect(page.get_by_text(re.compile("^Stale: chapter_split"))).to_be_visible()
    node(page, "chapter_split").click()
    expect(page.get_by_test_id("node-panel").get_by_role("button", name="Rerun chapter_split")).to_be_visible()

    # 6. Roll back chapter_split's `chapters` field to the model's version in the ledger view.
    page.get_by_role("tab", name="Ledger").click()
    ledger = page.get_by_role("region", name="Ledger of chapter_split")
    first = ledger.locator('[data-ledger="chapter_split@1"]')
    first.get_by_label("Field of chapter_split to restore (empty: all)").fill("chapters")
    first.get_by_role("button", name="Roll back to v1").click()
    expect(page.get_by_role("status").filter(has_text="is back at")).to_contain_text(
        "chapter_split.chapters is back at version 1"
    )
    expect(ledger.locator('[data-ledger="chapter_split@3"]')).to_contain_text("rollback")
    effective = next(n for n in server.run(run_id)["nodes"] if n["node_id"] == "chapter_split" and n["current"])
    assert len(effective["effective_output"]["chapters"]) == 3

    # 7. Diff with a second run of the same graph, node by node and field by field.
    other = server.start("video_chapters", {"transcript": "We build a birdhouse: cut, assemble, paint."})
    server.wait_status(other, "paused")
    page.get_by_role("tab", name="Compare").click()
    page.get_by_label("Run to compare with").select_option(other)
    diff = page.get_by_test_id("run-diff")
    expect(diff.locator('[data-diff-node="transcribe"]')).to_contain_text("changed")
    expect(diff.locator('[data-diff-node="transcribe"]')).to_contain_text("$.text")

    # And a model call can be replayed: the recorded answer beside a new one to the same request.
    page.get_by_role("tab", name="Node").click()
    node(page, "clip_points").click()
    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_role("heading", level=2)).to_contain_text("clip_points")  # the panel is clip_points' now, not
    panel.get_by_role("button", name="Replay the model call").click()  # chapter_split's still being replaced
    replay = page.get_by_test_id("replay")
    expect(replay).to_contain_text('"stored"')
    expect(replay).to_contain_text("The roof goes on in one move")
