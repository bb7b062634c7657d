"""The memory page (`#/memory`) in the browser against a real `plait serve`: the memories that
hold facts, a chat's facts with where each came from (the extraction run of `plait.memory_extract`
that found them, linked), a fact corrected with the form and its history shown as a timeline, a
fact retracted after an inline confirmation and gone from the active ones, superseded and
retracted ones shown on asking; a correction of a fact changed behind the page's back refused in
the server's words, and a form that cannot be sent said in plain words."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from plait.runs.memory import remember
from plait.store import Store
from tests.web.conftest import Served, serve
from tests.web.test_accessibility import violations

SESSION = "s-ada"
SCOPE = f"chat:{SESSION}"
EXTRACTED = """
responses:
  - node: extract
    output:
      facts:
        - {subject: Ada, predicate: lives in, object: Paris, text: Ada lives in Paris.}
        - {subject: Ada, predicate: plays, object: the cello, text: Ada plays the cello.}
"""


@pytest.fixture
def remembered(tmp_path: Path) -> Iterator[tuple[Served, str, str]]:
    """A server whose chat `s-ada` remembers two facts, found by a real extraction run (as the
    chat keeps them: with the turns, the run and its node run), and a second chat one fact; yields
    the server, the run and its node run."""
    script = tmp_path / "extract.yaml"
    script.write_text(EXTRACTED, encoding="utf-8")
    for server in serve(tmp_path, script=script):
        run_id = server.start("plait.memory_extract", {"turns": "user: I live in Paris and play the cello."})
        run = server.wait_status(run_id, "completed")
        node_run = next(n["id"] for n in run["nodes"] if n["node_id"] == "extract")
        source = {"messages": [3, 4], "session_id": SESSION, "run_id": run_id, "node_run_id": node_run}
        with Store(server.db) as store:
            remember(store, SCOPE, run["output"]["facts"], source=source, by="memory")
            remember(store, "chat:s-bob", [{"subject": "Bob", "predicate": "likes", "object": "tea"}],
                     source={"messages": [2], "session_id": "s-bob"}, by="memory")  # fmt: skip
        yield server, run_id, node_run


def _facts(server: Served, *, history: bool = False) -> list[dict[str, Any]]:
    response = server.client.get("/api/memory/facts", params={"scope": SCOPE, "history": history})
    assert response.status_code == 200, response.text
    return list(response.json())


def _fact_id(server: Served, text: str) -> str:
    return next(str(f["id"]) for f in _facts(server, history=True) if f["text"] == text)


def test_a_fact_is_corrected_and_retracted_with_its_history_shown(
    remembered: tuple[Served, str, str], page: Any
) -> None:
    server, run_id, node_run = remembered
    page.goto(server.url + "/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Memory").click()
    expect(page).to_have_url(f"{server.url}/#/memory")
    memories = page.get_by_role("table", name="Memories")
    expect(memories.locator(f'tr[data-scope="{SCOPE}"] td').nth(1)).to_have_text("2")
    expect(memories.locator('tr[data-scope="chat:s-bob"] td').nth(1)).to_have_text("1")

    # A chat's facts, each with its parts and where it came from.
    memories.get_by_role("link", name=SCOPE).click()
    expect(page).to_have_url(f"{server.url}/#/memory/chat%3As-ada")
    facts = page.get_by_role("table", name=f"Facts of {SCOPE}")
    rows = facts.locator("tbody tr")
    expect(rows).to_have_count(2)
    paris = _fact_id(server, "Ada lives in Paris.")
    row = facts.locator(f'tr[data-fact="{paris}"]')
    came_from = re.compile(r"^chat s-ada, turns 3–4 · run")
    cells = ["Ada lives in Paris.", "ada", "lives in", "paris", "active", "not said", came_from, re.compile(".")]
    expect(row.locator("td")).to_have_text(cells)
    expect(row.get_by_role("link", name=run_id[:8])).to_have_attribute("href", f"#/runs/{run_id}")
    expect(row.get_by_role("link", name="s-ada")).to_have_attribute("href", "#/chat?session=s-ada")
    expect(row).to_contain_text(f"node run {node_run[:8]}")
    assert violations(page) == []

    # Opened: its history (one entry so far) and the form with the fact as it stands.
    row.get_by_role("link", name="Ada lives in Paris.").click()
    expect(page).to_have_url(f"{server.url}/#/memory/chat%3As-ada?fact={paris}")
    panel = page.get_by_role("region", name=f"Fact {paris[:8]}")
    expect(panel.get_by_role("heading", name=f"Fact {paris[:8]}")).to_be_focused()
    history = panel.get_by_role("list", name="History")
    expect(history.locator("li")).to_have_count(1)
    expect(history.locator("li").first).to_contain_text("remembered by memory")
    form = panel.get_by_role("form", name="Correct this fact")
    expect(form.get_by_label("Object")).to_have_value("paris")
    expect(form.get_by_label("Sentence")).to_have_value("Ada lives in Paris.")

    # What cannot be sent is said before anything is sent.
    form.get_by_role("button", name="Correct").click()
    expect(form.get_by_role("alert")).to_have_text(
        "nothing to correct: change the subject, predicate, object or sentence first"
    )
    form.get_by_label("Object").fill("  ")
    form.get_by_role("button", name="Correct").click()
    expect(form.get_by_role("alert")).to_have_text(
        "the object cannot be empty: type what it should say, or put back “paris”"
    )
    assert len(_facts(server, history=True)) == 2

    # Corrected: the new fact opens, its history the old one then itself, the note and who.
    form.get_by_label("Object").fill("Lyon")
    form.get_by_label("Sentence").fill("Ada moved to Lyon.")
    form.get_by_label("Why (optional note)").fill("she moved")
    form.get_by_role("button", name="Correct").click()
    expect(page.get_by_role("status")).to_have_text(
        "corrected: “Ada moved to Lyon.” replaces “Ada lives in Paris.”, which stays in the history"
    )
    lyon = _fact_id(server, "Ada moved to Lyon.")
    expect(page).to_have_url(f"{server.url}/#/memory/chat%3As-ada?fact={lyon}")
    panel = page.get_by_role("region", name=f"Fact {lyon[:8]}")
    entries = panel.get_by_role("list", name="History").locator("li")
    expect(entries).to_have_count(2)
    expect(entries.nth(0)).to_have_attribute("data-fact", paris)
    expect(entries.nth(0)).to_contain_text("“Ada lives in Paris.”")
    expect(entries.nth(0).locator(".pill")).to_have_text("superseded")
    expect(entries.nth(1)).to_have_attribute("aria-current", "step")
    expect(entries.nth(1)).to_contain_text("corrected by api")
    expect(entries.nth(1)).to_contain_text("note: she moved")
    expect(entries.nth(1).get_by_role("link", name=paris[:8])).to_have_attribute(
        "href", f"#/memory/chat%3As-ada?fact={paris}&show=all"
    )
    corrected = server.client.get(f"/api/memory/facts/{lyon}").json()
    assert (corrected["object"], corrected["supersedes"], corrected["note"]) == ("lyon", paris, "she moved")
    assert [f["id"] for f in corrected["history"]] == [paris, lyon]
    expect(rows).to_have_count(2)
    expect(facts.locator(f'tr[data-fact="{paris}"]')).to_have_count(0)
    expect(facts.locator(f'tr[data-fact="{lyon}"]')).to_be_visible()
    assert violations(page) == []

    # Retract asks first, in place; keeping it changes nothing.
    cello = _fact_id(server, "Ada plays the cello.")
    facts.get_by_role("link", name="Ada plays the cello.").click()
    panel = page.get_by_role("region", name=f"Fact {cello[:8]}")
    panel.get_by_label("Why (optional)", exact=True).fill("she never played")
    panel.get_by_role("button", name="retract “Ada plays the cello.”").click()
    confirm = panel.get_by_role("group", name="Confirm: retract “Ada plays the cello.”")
    expect(confirm).to_contain_text("The chat will no longer recall it")
    confirm.get_by_role("button", name="keep it").click()
    expect(confirm).to_have_count(0)
    assert server.client.get(f"/api/memory/facts/{cello}").json()["status"] == "active"
    panel.get_by_role("button", name="retract “Ada plays the cello.”").click()
    confirm.get_by_role("button", name="yes, retract").click()
    expect(page.get_by_role("status")).to_have_text(
        "retracted “Ada plays the cello.”: the chat no longer recalls it; it stays in the history"
    )
    expect(facts.locator(f'tr[data-fact="{cello}"]')).to_have_count(0)  # gone from the active facts
    expect(rows).to_have_count(1)
    expect(panel.locator(".fact-text .pill")).to_have_text("retracted")
    expect(panel.get_by_role("list", name="History")).to_contain_text("note: she never played")
    expect(panel.get_by_role("form", name="Correct this fact")).to_have_count(0)
    expect(panel.get_by_role("note")).to_have_text("Only an active fact can be corrected or retracted.")
    retracted = server.client.get(f"/api/memory/facts/{cello}").json()
    assert (retracted["status"], retracted["note"]) == ("retracted", "she never played")
    expect(memories.locator(f'tr[data-scope="{SCOPE}"] td').nth(1)).to_have_text("1")

    # All of them on asking: the superseded one leads to the fact that is active now.
    page.get_by_role("radio", name="all, with superseded and retracted ones").check()
    expect(page).to_have_url(re.compile(r"show=all"))
    expect(rows).to_have_count(3)
    expect(facts.locator(f'tr[data-fact="{cello}"] .pill')).to_have_text("retracted")
    facts.get_by_role("link", name="Ada lives in Paris.").click()
    panel = page.get_by_role("region", name=f"Fact {paris[:8]}")
    expect(panel.get_by_role("note")).to_contain_text("The active one now: “Ada moved to Lyon.”")
    page.get_by_role("radio", name="active facts").check()
    expect(rows).to_have_count(1)

    # The run that found a fact opens from its history.
    panel.get_by_role("list", name="History").locator("li").first.get_by_role("link", name=run_id[:8]).click()
    expect(page).to_have_url(f"{server.url}/#/runs/{run_id}")
    expect(page.locator(".box[data-node='extract']")).to_be_visible()


def test_a_fact_changed_behind_the_page_is_refused_in_plain_words(
    remembered: tuple[Served, str, str], page: Any
) -> None:
    server, _run, _node_run = remembered
    paris = _fact_id(server, "Ada lives in Paris.")
    page.goto(f"{server.url}/#/memory/chat%3As-ada?fact={paris}")
    panel = page.get_by_role("region", name=f"Fact {paris[:8]}")
    form = panel.get_by_role("form", name="Correct this fact")
    expect(form.get_by_label("Object")).to_have_value("paris")

    nice = {"object": "Nice", "text": "Ada lives in Nice."}
    made = server.client.post(f"/api/memory/facts/{paris}/correct", json=nice)
    assert made.status_code == 201, made.text
    form.get_by_label("Object").fill("Marseille")
    form.get_by_role("button", name="Correct").click()
    alert = panel.get_by_role("alert")
    expect(alert).to_contain_text(f"conflict: fact {paris} was superseded by {made.json()['id']}")
    expect(alert).to_contain_text("hint: correct the fact that is active now")
    # read again: the fact as it is now, and the way to the active one
    expect(panel.locator(".fact-text .pill")).to_have_text("superseded")
    panel.get_by_role("link", name="“Ada lives in Nice.”").click()
    expect(page).to_have_url(f"{server.url}/#/memory/chat%3As-ada?fact={made.json()['id']}")
    assert [f["text"] for f in _facts(server)] == ["Ada plays the cello.", "Ada lives in Nice."]

    # A fact that does not exist, and an empty memory, said as such.
    page.goto(f"{server.url}/#/memory/chat%3Anobody?fact=nope")
    expect(page.get_by_role("alert")).to_contain_text("no remembered fact 'nope'")
    expect(page.get_by_text("No active fact: show all to see the others.")).to_be_visible()
    assert violations(page) == []
