"""The chat panel of the workbench, driven through the page only, on a real `plait serve` whose
designer is scripted (`tests/chat_rules.py`, the rules the API's chat tests use): a new graph
asked for in words, a question card answered, the proposed draft drawn on the canvas (its node
marked added), accepted, stored and run from the conversation with its answer streamed in; and
an edit of a stored graph drawn as a change, rejected, leaving the graph byte for byte as it was.
The stream is cut once on the way: the page reads it again from the last message it has, and
shows each message once."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.api.api_helpers import ECHO
from tests.chat_rules import RULES
from tests.web.conftest import Served, serve
from tests.web.test_accessibility import violations

LONG = 60_000
"""A turn is a designer run (or two) and a run streams its answer over 1.5 s: generous, as a
loaded CI host takes its time; nothing here depends on how fast it is."""

# The chat's event stream, cut from the page's side as a dropped connection would be: each
# connection is counted, and `cutChat()` aborts the open ones (the page then reads the stream
# again, naming the last message it has in Last-Event-ID).
CUTTER = """
window.chatConnections = 0;
const openStreams = [];
const fetched = window.fetch.bind(window);
window.fetch = (resource, init) => {
  const url = typeof resource === "string" ? resource : resource.url;
  if (!/\\/api\\/chat\\/sessions\\/[^/]+\\/events$/.test(url)) return fetched(resource, init);
  window.chatConnections += 1;
  const cut = new AbortController();
  openStreams.push(cut);
  const signal = init && init.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal;
  return fetched(resource, { ...init, signal });
};
window.cutChat = () => openStreams.splice(0).forEach((c) => c.abort());
window.violations = [];
document.addEventListener("securitypolicyviolation", (e) => window.violations.push(e.violatedDirective));
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    script = tmp_path / "designer.json"
    script.write_text(json.dumps({"responses": RULES}), encoding="utf-8")
    yield from serve(tmp_path, script=script)


def _chat(page: Any) -> Any:
    return page.get_by_role("complementary", name="Chat")


def _send(page: Any, text: str) -> None:
    chat = _chat(page)
    chat.get_by_role("textbox", name="Message").fill(text)
    chat.get_by_role("button", name="Send", exact=True).click()


def _seqs(page: Any) -> list[int]:
    return [int(s) for s in _chat(page).locator("li[data-seq]").evaluate_all("els => els.map(e => e.dataset.seq)")]


def test_a_new_graph_designed_answered_accepted_and_run_in_the_chat(server: Served, page: Any) -> None:
    streams: list[str | None] = []
    page.on(
        "request",
        lambda r: streams.append(r.headers.get("last-event-id")) if r.url.endswith("/events") else None,
    )
    page.add_init_script(CUTTER)
    page.goto(f"{server.url}/#/new-graph")
    page.get_by_role("link", name="design it in a chat").click()
    expect(page.get_by_role("heading", name="New graph from a chat")).to_be_visible()
    chat = _chat(page)

    _send(page, "Translate my notes")
    expect(page).to_have_url(re.compile(r"#/chat\?session=[^&]+$"))  # a reload opens the same conversation
    card = chat.get_by_role("form", name="Questions")
    expect(card.get_by_role("group", name="Into which language?")).to_be_visible(timeout=LONG)
    expect(chat.get_by_text("round 1: asking the designer")).to_be_visible()
    assert violations(page) == []  # the panel with its question card

    # the stream breaks: the page reads it again from the last message it has
    before = _seqs(page)
    page.evaluate("window.cutChat()")
    page.wait_for_function("() => window.chatConnections >= 2", timeout=LONG)
    card.get_by_role("radio", name="German").check()
    card.get_by_role("button", name="Send answers").click()

    draft = chat.locator(".draft-card[data-status='proposed']")
    expect(draft).to_be_visible(timeout=LONG)
    expect(draft.get_by_role("list", name="What the draft changes")).to_contain_text("+ node translate")
    seqs = _seqs(page)
    assert seqs == sorted(set(seqs)), seqs  # each message once, in order
    assert seqs[: len(before)] == before
    assert str(before[-1]) in streams, f"no reconnection named the last message: {streams}"

    # the draft of a new graph is drawn whole, everything in it added
    added = page.locator(".box[data-node='translate']")
    expect(added).to_have_attribute("data-diff", "added", timeout=LONG)
    expect(added).to_contain_text("added")
    expect(page.get_by_test_id("overlay-note")).to_contain_text("1 node and 1 edge added")
    assert violations(page) == []  # the canvas with the draft drawn on it

    draft.get_by_role("button", name="Accept").click()
    # stored: its own canvas opens, the conversation beside it
    expect(page).to_have_url(re.compile(r"#/graphs/translate_my_notes\?chat=[^&]+$"), timeout=LONG)
    expect(page.get_by_role("heading", name="Translate my notes")).to_be_visible()
    stored = page.locator(".box[data-node='translate']")
    expect(stored).to_be_visible()
    expect(stored).not_to_have_attribute("data-diff", "added")
    expect(page.get_by_role("combobox", name="Version")).to_have_value("1")
    chat = _chat(page)
    expect(chat.get_by_text("Stored translate_my_notes v1.")).to_be_visible()
    assert server.client.get("/api/graphs/translate_my_notes").json()["version"] == 1

    chat.get_by_role("button", name="Run translate_my_notes…").click()
    form = chat.get_by_role("form", name="Run input")
    form.get_by_label("notes").fill("Hello all")
    form.get_by_role("button", name="Start the run").click()
    run = chat.locator(".run-card")
    expect(run.get_by_test_id("run-status")).to_have_text("completed", timeout=LONG)
    expect(run).to_contain_text("Hallo zusammen")
    expect(run.locator(".run-nodes")).to_contain_text("translate completed")
    run_id = run.get_attribute("data-run")
    assert run_id
    expect(run.get_by_role("link", name=run_id[:8])).to_have_attribute("href", f"#/runs/{run_id}")
    assert server.client.get(f"/api/runs/{run_id}").json()["output"] == {"text": "Hallo zusammen"}
    assert page.evaluate("() => window.violations") == []  # nothing the server's policy refused


def test_a_rejected_edit_leaves_the_stored_graph_as_it_was(server: Served, page: Any) -> None:
    imported = server.client.post("/api/graphs/import", json={"source": ECHO})
    assert imported.status_code in (200, 201), imported.text
    before = server.client.get("/api/graphs/echo/export").content

    page.goto(f"{server.url}/#/graphs/echo")
    expect(page.locator(".box[data-node='polish']")).to_be_visible()
    page.get_by_role("button", name="Chat", exact=True).click()
    expect(page).to_have_url(re.compile(r"#/graphs/echo\?chat=new$"))
    chat = _chat(page)
    expect(chat).to_contain_text("on echo")
    _send(page, "Make the polish step gentler")

    draft = chat.locator(".draft-card[data-status='proposed']")
    expect(draft).to_be_visible(timeout=LONG)
    expect(draft).to_contain_text("~ node polish: system_prompt")
    polish = page.locator(".box[data-node='polish']")
    expect(polish).to_have_attribute("data-diff", "changed", timeout=LONG)
    expect(polish.locator(".box-diff")).to_have_attribute("title", "changed: system_prompt")
    expect(page.locator(".box[data-node='draft']")).not_to_have_attribute("data-diff", "changed")
    expect(page.get_by_test_id("overlay-note")).to_contain_text("1 node changed")

    draft.get_by_role("button", name="Reject").click()
    expect(chat.get_by_text("Draft rejected.")).to_be_visible()
    expect(page.get_by_test_id("overlay-note")).to_have_count(0)
    expect(polish).to_be_visible()
    expect(polish).not_to_have_attribute("data-diff", "changed")
    expect(chat.get_by_role("button", name="Accept")).to_have_count(0)
    assert server.client.get("/api/graphs/echo/export").content == before
    assert server.client.get("/api/graphs/echo").json()["version"] == 1


def test_an_accepted_edit_shows_the_stored_version_on_the_canvas(server: Served, page: Any) -> None:
    imported = server.client.post("/api/graphs/import", json={"source": ECHO})
    assert imported.status_code in (200, 201), imported.text
    page.goto(f"{server.url}/#/graphs/echo?chat=new")
    _send(page, "Make the polish step gentler")
    chat = _chat(page)
    draft = chat.locator(".draft-card[data-status='proposed']")
    expect(draft).to_be_visible(timeout=LONG)
    expect(page.locator(".box[data-node='polish']")).to_have_attribute("data-diff", "changed", timeout=LONG)
    draft.get_by_role("button", name="Accept").click()

    expect(chat.get_by_text("Stored echo v2.")).to_be_visible()
    expect(page.get_by_role("combobox", name="Version")).to_have_value("2")
    expect(page.get_by_test_id("overlay-note")).to_have_count(0)
    expect(page.locator(".box[data-node='polish']")).not_to_have_attribute("data-diff", "changed")
    expect(page).to_have_url(re.compile(r"#/graphs/echo\?chat=[0-9a-f-]{8,}$"))  # the conversation goes on
    stored = server.client.get("/api/graphs/echo").json()
    assert stored["version"] == 2
    assert next(n for n in stored["graph"]["nodes"] if n["id"] == "polish")["system_prompt"] == "Polish gently."
