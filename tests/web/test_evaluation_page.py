"""Evaluating a version against the people's corrections in the browser, against a real `plait
serve` on the scripted provider: a graph whose four runs a person judged (two labels approved, two
corrected in review), version 1 promoted; from the canvas's Versions tab, version 2 evaluated on
a set built right there (a missing name said in plain words first), its verdict in the API's own
lines, the field report, each case with the fields that differ (expected, candidate, original),
the source run, the evaluation's run and the person's note, filtered by outcome; promotion refused
by the failing gate, forced with a note (none refused first), and the "runs by default" marker
moving to version 2 with the promotion in the history. Then an evaluation the server is not
driving yet, followed live from its event stream to a passing verdict once it is started, and
version 3 promoted through the gate."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import expect

from plait.evaluation import GateRules
from plait.runs.eval_run import start_evaluation
from plait.store import Store
from tests.web.conftest import Served, serve
from tests.web.test_accessibility import violations

LABEL = {
    "type": "object",
    "required": ["label", "urgent"],
    "properties": {"label": {"type": "string", "enum": ["bug", "question", "praise"]}, "urgent": {"type": "boolean"}},
}


def graph(prompt: str) -> dict[str, Any]:
    """The triage graph: a model labels feedback, a person reviews the label, it is passed on."""
    return {
        "id": "triage",
        "name": "Triage",
        "input_schema": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
        "schemas": [{"id": "label", "schema": LABEL}],
        "nodes": [
            {"id": "classify", "type": "LLM_CALL", "user_prompt_tpl": prompt},
            {"id": "review", "type": "HUMAN_REVIEW"},
            {"id": "finish", "type": "TRANSFORM", "transform_expr": "({label: current.label, urgent: current.urgent})"},
        ],
        "edges": [
            {"source": "classify", "target": "review", "schema_id": "label"},
            {"source": "review", "target": "finish", "schema_id": "label"},
            {"source": "finish", "target": "END", "schema_id": "label"},
        ],
    }


def answer(match: str, label: str, urgent: bool) -> dict[str, Any]:
    return {"node": "classify", "match": match, "output": {"label": label, "urgent": urgent}}


ANSWERS = [
    # version 3 gets every case right
    answer("Label v3: .*crash", "bug", True),
    answer("Label v3: (how|meh)", "question", False),
    answer("Label v3:", "praise", False),
    # version 2 fixes the export question, breaks the crash, and gets "meh?" wrong another way
    answer("Label v2: .*crash", "question", True),
    answer("Label v2: .*export", "question", False),
    answer("Label v2: .*great", "praise", False),
    answer("Label v2:", "praise", True),
    # version 1: crashes are bugs, anything else praise
    answer("Feedback: .*crash", "bug", True),
    answer("Feedback:", "praise", False),
]
INPUTS = {"r1": "it crashes", "r2": "how do I export?", "r3": "great app", "r4": "meh?"}


@pytest.fixture
def judged(tmp_path: Path) -> Iterator[tuple[Served, dict[str, str]]]:
    """Version 1 with four judged runs (r1 and r3 approved in review, r2 and r4 corrected there,
    with notes), versions 2 and 3 stored, version 1 promoted (forced: there was no gate yet)."""
    script = tmp_path / "answers.yaml"
    script.write_text(yaml.safe_dump({"responses": ANSWERS}), encoding="utf-8")
    for server in serve(tmp_path, script=script):
        server.import_graph(graph("Feedback: {{ input.text }}"))
        runs = {key: server.start("triage", {"text": text}) for key, text in INPUTS.items()}
        said = {
            "r1": {"approve": True},
            "r2": {"value": {"label": "question", "urgent": False}, "note": "it asks how to export"},
            "r3": {"approve": True},
            "r4": {"value": {"label": "question", "urgent": False}, "note": "a question, not praise"},
        }
        for key, run_id in runs.items():
            server.wait_status(run_id, "paused")
            reviewed = server.client.post(f"/api/runs/{run_id}/nodes/review/review", json=said[key])
            assert reviewed.status_code == 200, reviewed.text
            server.wait_status(run_id, "completed")
        assert server.import_graph(graph("Label v2: {{ input.text }}"))["version"] == 2
        assert server.import_graph(graph("Label v3: {{ input.text }}"))["version"] == 3
        first = server.client.post(
            "/api/graphs/triage/promote", json={"version": 1, "force": True, "note": "before the gate"}
        )
        assert first.status_code == 200, first.text
        yield server, runs


def _evaluation(server: Served, evaluation_id: str) -> dict[str, Any]:
    response = server.client.get(f"/api/evaluations/{evaluation_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def _versions(page: Any) -> Any:
    return page.get_by_role("list", name="Version history")


def test_a_version_is_evaluated_from_the_versions_panel_and_forced_past_a_failing_gate(
    judged: tuple[Served, dict[str, str]], page: Any
) -> None:
    server, runs = judged
    page.goto(f"{server.url}/#/graphs/triage")
    page.get_by_role("tab", name="Versions").click()
    history = _versions(page)
    expect(history.locator('li[data-version="1"]')).to_contain_text("runs by default")
    expect(history.locator('li[data-version="2"]')).not_to_contain_text("runs by default")
    expect(page.get_by_test_id("runs-by-default")).to_have_text(
        "Version 1 runs by default: runs that name no version use it."
    )

    # The set is built in the dialog; a name is asked for in plain words first.
    opener = history.get_by_role("button", name="Evaluate v2 against corrections…")
    opener.click()
    dialog = page.get_by_role("dialog", name="Evaluate version 2 of triage against corrections")
    expect(dialog).to_be_focused()  # the keyboard starts in it, and Esc leaves it
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    opener.focus()
    page.keyboard.press("Enter")
    expect(dialog).to_contain_text("This graph has no evaluation set yet")
    expect(dialog.get_by_role("radio", name="build a new set")).to_be_checked()
    dialog.get_by_role("button", name="Build set").click()
    expect(dialog.get_by_role("alert")).to_contain_text("give the new set a name, e.g. triage")
    dialog.get_by_label("Set name").fill("triage")
    expect(dialog.get_by_role("checkbox", name="corrections", exact=True)).to_be_checked()
    expect(dialog.get_by_role("checkbox", name="approvals", exact=True)).to_be_checked()
    dialog.get_by_role("button", name="Build set").click()
    expect(dialog.get_by_role("status")).to_have_text("Built triage@1: 4 cases (2 corrected, 2 approved).")
    expect(dialog.get_by_role("radio", name=re.compile(r"^triage@1 · 4 cases"))).to_be_checked()
    # The gate's rules with their defaults, and the baseline.
    expect(dialog.get_by_label("Baseline")).to_have_value("recorded")
    expect(dialog.get_by_label("Repetitions (candidate runs per case)")).to_have_value("1")
    for label, value in [("Max regressions", "0"), ("Alpha (McNemar)", "0.05"),
                         ("Max approved drop (0 to 1)", "0"), ("Min comparable cases", "10")]:  # fmt: skip
        expect(dialog.get_by_label(label, exact=True)).to_have_value(value)
    assert violations(page) == []
    dialog.get_by_role("button", name="Start the evaluation").click()

    # The evaluation's page: the verdict, exactly as the API says it.
    expect(page).to_have_url(re.compile(r"#/evaluations/[0-9a-f-]+$"))
    evaluation_id = page.url.rsplit("/", 1)[1]
    expect(page.get_by_role("heading", name="Verdict: fail")).to_be_visible()
    shown = _evaluation(server, evaluation_id)
    assert (shown["status"], shown["candidate_version"], shown["verdict"]["status"]) == ("completed", 2, "fail")
    expect(page.get_by_test_id("verdict-lines")).to_have_text("\n".join(shown["verdict"]["lines"]))
    report = page.get_by_role("list", name="Field report")
    expect(report.locator('li[data-field="label"]')).to_have_text("label regressed in 1 case, fixed in 1 case")
    expect(report.locator('li[data-field="urgent"]')).to_have_text("urgent regressed in 1 case, fixed in 0 cases")

    # Every case: its outcome, label, node, the fields that differ, its runs and the note.
    table = page.get_by_role("table", name="Cases", exact=True)
    rows = table.locator(":scope > tbody > tr")
    expect(rows).to_have_count(4)
    by_case = {c["position"]: c for c in shown["cases"]}
    outcomes = {1: "regressed", 2: "fixed", 3: "still right", 4: "still wrong"}
    for position, outcome in outcomes.items():
        row = table.locator(f'tbody > tr[data-case="{position}"]')
        expect(row.locator("td").nth(1)).to_have_text(outcome)
        expect(row.locator("td").nth(3)).to_have_text("classify")
        source = runs[f"r{position}"]
        expect(row.get_by_role("link", name=f"source run {source[:8]}")).to_have_attribute("href", f"#/runs/{source}")
        candidate_run = by_case[position]["candidate"][0]["run_id"]
        expect(row.get_by_role("link", name=f"evaluation run {candidate_run[:8]}")).to_have_attribute(
            "href", f"#/runs/{candidate_run}"
        )
    regressed = table.locator('tbody > tr[data-case="1"]')
    expect(regressed.locator("td").nth(2)).to_have_text("approved")
    fields = regressed.get_by_role("table", name="Fields of case #1")
    expect(fields.locator("tbody tr")).to_have_count(1)  # `urgent` passed on both sides: not listed
    expect(fields.locator('tr[data-field="label"] > *')).to_have_text(
        ["label exact", '"bug"', re.compile(r'^"question"✗ expected "bug", got "question"'), '"bug"✓ passes']
    )
    fixed = table.locator('tbody > tr[data-case="2"]')
    expect(fixed.locator("td").nth(2)).to_have_text("corrected")
    expect(fixed.get_by_role("table", name="Fields of case #2").locator('tr[data-field="label"] > *')).to_have_text(
        ["label exact", '"question"', '"question"✓ passes', re.compile(r'^"praise"✗ expected "question", got "praise"')]
    )
    expect(fixed.locator("td.note")).to_contain_text("“it asks how to export”")
    still_wrong = table.locator('tbody > tr[data-case="4"]').get_by_role("table", name="Fields of case #4")
    expect(still_wrong.locator("tbody tr")).to_have_count(2)
    expect(still_wrong.locator('tr[data-field="urgent"] > *').nth(2)).to_contain_text("true✗")
    expect(table.locator('tbody > tr[data-case="3"] td').nth(4)).to_have_text("every field passes")

    # Filtered by outcome, in the address too.
    page.get_by_role("radio", name="regressed (1)").check()
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-case", "1")
    expect(page).to_have_url(re.compile(r"\?outcome=regressed$"))
    page.get_by_role("radio", name="every case (4)").check()
    expect(rows).to_have_count(4)
    assert violations(page) == []

    # The gate refuses: the button says why; forced, with a note (none is refused first).
    promotion = page.get_by_test_id("promotion")
    refused = promotion.get_by_role("button", name="Promote version 2: refused, the verdict is fail")
    expect(refused).to_be_disabled()
    expect(promotion).to_contain_text("regressions 1 > 0 allowed")
    promotion.get_by_role("button", name="Promote anyway…").click()
    force = promotion.get_by_role("form", name="Promote version 2 anyway")
    note = force.get_by_label("Why promote it anyway (required; kept with the promotion)")
    expect(note).to_be_focused()
    force.get_by_role("button", name="Promote version 2 anyway").click()
    expect(promotion.get_by_role("alert").locator("strong")).to_have_text(
        "a forced promotion needs a note: say why version 2 should run by default despite the gate"
    )
    note.fill("the crash label is fixed downstream")
    force.get_by_role("button", name="Promote version 2 anyway").click()
    expect(promotion.get_by_role("status")).to_have_text(
        "Version 2 now runs by default: promoted anyway, over the gate triage@1, with your note."
    )
    expect(promotion).to_contain_text("Version 2 runs by default")
    detail = server.client.get("/api/graphs/triage").json()
    assert detail["promoted_version"] == 2
    latest = detail["promotions"][0]
    assert (latest["version"], latest["previous_version"], latest["forced"]) == (2, 1, True)
    assert (latest["note"], latest["evaluation_id"], latest["gate"]) == (
        "the crash label is fixed downstream", evaluation_id, "triage@1")  # fmt: skip

    # Back on the versions panel: the marker moved, the promotion and the evaluation are listed.
    promotion.get_by_role("link", name="the graph's versions and promotions").click()
    history = _versions(page)
    expect(history.locator('li[data-version="2"]')).to_contain_text("runs by default")
    expect(history.locator('li[data-version="1"]')).not_to_contain_text("runs by default")
    promotions = page.get_by_role("list", name="Promotion history").locator("li")
    expect(promotions).to_have_count(2)
    expect(promotions.first).to_contain_text("v2 (was v1) · forced over triage@1 (fail)")
    expect(promotions.first).to_contain_text("“the crash label is fixed downstream”")
    evaluations = page.get_by_role("table", name="Evaluations")
    expect(evaluations.locator(f'tr[data-evaluation="{evaluation_id}"] td')).to_have_text(
        ["v2", "triage@1", "fail", re.compile(".")]
    )
    evaluations.get_by_role("link", name="v2").click()
    expect(page).to_have_url(f"{server.url}/#/evaluations/{evaluation_id}")
    expect(page.get_by_test_id("promotion")).to_contain_text("Version 2 runs by default")


def test_the_page_follows_an_evaluation_live_and_promotes_through_a_passing_gate(
    judged: tuple[Served, dict[str, str]], page: Any
) -> None:
    server, _ = judged
    built = server.client.post("/api/graphs/triage/eval-sets", json={"name": "triage"})
    assert built.status_code == 201, built.text
    with Store(server.db) as store:  # recorded, not driven: nothing scores it until it is started
        waiting = start_evaluation(store, "triage", "triage@1", candidate_version=3, rules=GateRules(min_comparable=1),
                                   by="ann")  # fmt: skip
    page.goto(f"{server.url}/#/evaluations/{waiting.id}")
    progress = page.get_by_role("status").filter(has=page.get_by_role("progressbar", name="Cases scored"))
    expect(progress).to_have_text(re.compile(r"0 of 4 cases scored \(starting\)"))
    expect(page.get_by_text("This server is not driving this evaluation.")).to_be_visible()
    page.evaluate("window.stillHere = true")

    # Started (the same request goes on with the same evaluation): the page follows it to its verdict.
    started = server.client.post(
        "/api/graphs/triage/evaluations", json={"set": "triage@1", "version": 3, "min_cases": 1}
    )
    assert started.status_code == 202, started.text
    assert started.json()["id"] == waiting.id
    expect(page.get_by_role("heading", name="Verdict: pass")).to_be_visible()
    assert page.evaluate("window.stillHere") is True  # the same page, not a reload
    expect(page.get_by_role("progressbar")).to_have_count(0)
    lines = _evaluation(server, waiting.id)["verdict"]["lines"]
    expect(page.get_by_test_id("verdict-lines")).to_have_text("\n".join(lines))
    table = page.get_by_role("table", name="Cases", exact=True)
    expect(table.locator(":scope > tbody > tr > td:nth-child(2)")).to_have_text(
        ["still right", "fixed", "still right", "fixed"]
    )

    promotion = page.get_by_test_id("promotion")
    expect(promotion).to_contain_text("through the gate triage@1: its verdict is pass.")
    promotion.get_by_role("button", name="Promote version 3").click()
    expect(promotion.get_by_role("status")).to_have_text(
        "Version 3 now runs by default: promoted through the gate triage@1."
    )
    detail = server.client.get("/api/graphs/triage").json()
    assert detail["promoted_version"] == 3
    assert (detail["promotions"][0]["forced"], detail["promotions"][0]["evaluation_id"]) == (False, waiting.id)
    assert violations(page) == []
