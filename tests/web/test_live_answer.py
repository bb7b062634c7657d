"""A node's answer fills the run page's node panel while the model writes it: a run started from
the canvas streams every node; the panel shows the text so far while the node runs, then the
committed output; a node that asks the model again clears its text and says why."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import expect

from tests.web.conftest import EXAMPLES, Served, serve

CHAPTERS = {
    "chapters": [
        {"title": "Introduction", "start_sec": 0, "end_sec": 12, "summary": "What we will build"},
        {"title": "Cutting the pieces", "start_sec": 12, "end_sec": 70},
        {"title": "Assembly and painting", "start_sec": 70, "end_sec": 140},
    ]
}
ANSWER = json.dumps(CHAPTERS, ensure_ascii=False)
"""chapter_split's answer as the scripted provider sends it, word by word."""
DRAFT = "Broken draft: " + " ".join(f"word{n}" for n in range(30))
"""The first answer of a run whose transcript says BREAK: it breaks off after its 12th word."""

SCRIPT = {
    "responses": [
        {
            "node": "chapter_split",
            "match": "BREAK",
            "times": 1,
            "text": DRAFT,
            "stream_break_after": len(" ".join(DRAFT.split()[:12])),
            "delay_ms": 16_000,
        },
        # The answer takes seconds to write: long enough to open the run and pick the node.
        {"node": "chapter_split", "output": CHAPTERS, "delay_ms": 8_000},
        {"node": "clip_points", "output": {"clips": [{"at_sec": 75, "reason": "The roof goes on in one move"}]}},
    ]
}

# Every state the live answer is shown in, as the page showed it: its text, the asked-again
# note, and the node's colour in the graph then. Recorded in the page itself, so that no state
# is missed however briefly it lasted.
RECORDER = """
window.liveAnswers = [];
new MutationObserver(() => {
  const live = document.querySelector("[data-testid=live-answer]");
  if (!live) return;
  const note = document.querySelector("[data-testid=asked-again]");
  const box = document.querySelector('.box[data-node="chapter_split"]');
  const seen = {
    text: live.textContent,
    note: note ? note.textContent : null,
    node: box ? box.getAttribute("data-status") : null,
  };
  const last = window.liveAnswers[window.liveAnswers.length - 1];
  if (!last || JSON.stringify(last) !== JSON.stringify(seen)) window.liveAnswers.push(seen);
}).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
"""

# The run's event stream, cut from the page's side as a dropped connection would be: each new
# connection is marked in the record, and `cutEvents()` aborts the open ones (the page then
# reconnects with Last-Event-ID).
CUTTER = """
const open = [];
const fetched = window.fetch.bind(window);
window.fetch = (resource, init) => {
  const url = typeof resource === "string" ? resource : resource.url;
  if (!url.endsWith("/events")) return fetched(resource, init);
  window.liveAnswers.push({ connection: open.length + 1 });
  const cut = new AbortController();
  open.push(cut);
  const signal = init && init.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal;
  return fetched(resource, { ...init, signal });
};
window.cutEvents = () => open.forEach((cut) => cut.abort());
"""


@pytest.fixture
def slow_server(tmp_path: Path) -> Iterator[Served]:
    script = tmp_path / "slow_answers.yaml"
    script.write_text(yaml.safe_dump(SCRIPT, sort_keys=False))
    yield from serve(tmp_path, script=script)


def start_from_the_canvas(server: Served, page: Any, transcript: str) -> None:
    """Start a run of video_chapters as a person does, and pick chapter_split on its run page."""
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    page.add_init_script(RECORDER)
    page.goto(f"{server.url}/#/graphs/video_chapters")
    page.get_by_role("button", name="Start a run…").click()
    page.locator('textarea[name="transcript"]').fill(transcript)
    page.get_by_role("button", name="Start", exact=True).click()
    expect(page).to_have_url(re.compile(r"#/runs/[0-9a-f-]{36}$"))
    page.locator('.box[data-node="chapter_split"]').click()


def seen(page: Any) -> list[dict[str, Any]]:
    return list(page.evaluate("window.liveAnswers"))


def test_the_node_panel_shows_the_answer_as_it_arrives_then_the_committed_output(
    slow_server: Served, page: Any
) -> None:
    start_from_the_canvas(slow_server, page, "We build a birdhouse: cut, assemble, paint.")
    panel = page.get_by_test_id("node-panel")
    live = panel.get_by_role("log", name="Answer so far")
    expect(live).to_contain_text('{"chapters": [{"title":', timeout=60_000)

    # The run pauses at the review once chapter_split and clip_points are done.
    expect(page.get_by_test_id("run-status")).to_have_text("paused", timeout=60_000)
    expect(live).to_have_count(0)
    expect(panel.get_by_test_id("effective-output")).to_contain_text('"Assembly and painting"')
    expect(panel.locator(".pill")).to_have_text("completed")

    shown = seen(page)
    # The text grew in place, never repeated: every state shown is the start of the answer...
    assert shown, "the panel never showed the answer while it arrived"
    assert all(ANSWER.startswith(s["text"]) for s in shown), shown
    # ...and part of it was shown while the node was still running.
    assert any(0 < len(s["text"]) < len(ANSWER) and s["node"] == "running" for s in shown), shown


def test_a_node_that_asks_again_clears_its_text_and_says_why(slow_server: Served, page: Any) -> None:
    start_from_the_canvas(slow_server, page, "BREAK: we build a birdhouse.")
    panel = page.get_by_test_id("node-panel")
    expect(panel.get_by_test_id("asked-again")).to_have_text(
        "asked again: the scripted answer stream broke off", timeout=60_000
    )
    expect(page.get_by_test_id("run-status")).to_have_text("paused", timeout=60_000)
    expect(panel.get_by_test_id("effective-output")).to_contain_text('"Assembly and painting"')

    shown = seen(page)
    reset = next(i for i, s in enumerate(shown) if s["note"] is not None)
    before, after = shown[:reset], shown[reset:]
    assert any(s["text"].startswith("Broken draft: word0") for s in before), shown
    # After the reset nothing of the first answer remains: the second one starts from nothing.
    assert all(ANSWER.startswith(s["text"]) for s in after), shown
    assert any(s["text"] for s in after), shown


def test_a_run_opened_mid_answer_shows_the_text_so_far_and_a_reconnect_does_not_repeat_it(
    slow_server: Served, page: Any
) -> None:
    server = slow_server
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    started = server.client.post(
        "/api/runs", json={"graph": "video_chapters", "input": {"transcript": "A birdhouse."}, "stream": True}
    )
    assert started.status_code == 202, started.text
    page.add_init_script(RECORDER)
    page.add_init_script(CUTTER)
    page.goto(f"{server.url}/#/runs/{started.json()['run_id']}")
    page.locator('.box[data-node="chapter_split"]').click()
    live = page.get_by_test_id("node-panel").get_by_role("log", name="Answer so far")
    expect(live).to_contain_text('"title": "Introduction"', timeout=60_000)

    # The connection drops mid-answer; the page reconnects and is sent the text so far once more.
    with page.expect_request(lambda request: request.url.endswith("/events")):
        page.evaluate("window.cutEvents()")
    expect(page.get_by_test_id("run-status")).to_have_text("paused", timeout=60_000)
    expect(live).to_have_count(0)
    expect(page.get_by_test_id("effective-output")).to_contain_text('"Assembly and painting"')

    shown = seen(page)
    second = shown.index({"connection": 2})
    texts = [s["text"] for s in shown if "text" in s]
    # Had the text so far been added to what the page had, the answer would show twice over.
    assert all(ANSWER.startswith(text) for text in texts), texts
    before = [s for s in shown[:second] if "text" in s]
    after = [s for s in shown[second:] if "text" in s]
    assert before, shown
    assert after, shown
    # The answer went on growing after the reconnect, while the node ran.
    assert any(len(s["text"]) > len(before[-1]["text"]) and s["node"] == "running" for s in after), shown
