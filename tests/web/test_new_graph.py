"""A graph from nothing in the browser, with no YAML typed: "New graph" takes a name, an id, a
description and the run input as a form; the palette adds an LLM_CALL, a CONDITION and a TRANSFORM;
edges are drawn between handles, and their schemas are made and edited in the schema form. The
graph, invalid while it is being built, is kept as a draft on the server (a reload loses nothing);
stored as version 1, it runs on the scripted provider and completes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from playwright.sync_api import expect

from tests.web.conftest import EXAMPLES, serve
from tests.web.test_canvas import connect, editor_text, node, type_into


def rename(page: Any, to: str) -> None:
    """Rename the selected node in its form."""
    field = page.get_by_test_id("node-form").get_by_label("Id", exact=True)
    field.fill(to)
    field.press("Enter")
    expect(node(page, to)).to_be_visible()


def add(page: Any, node_type: str, name: str) -> None:
    page.get_by_role("navigation", name="Node types").get_by_role("button", name=f"Add {node_type}").click()
    rename(page, name)


def select_edge(page: Any, edge_id: str) -> Any:
    # the event sent to the edge itself: edges into END share their last segments, and a click at
    # a point of the screen could land on another one
    page.locator(f'.react-flow__edge[data-id="{edge_id}"]').dispatch_event("click")
    form = page.get_by_test_id("edge-form")
    expect(form).to_contain_text(edge_id)
    return form


def edit_field(form: Any, index: int, *, name: str, kind: str | None = None, choices: str | None = None) -> None:
    """Set field `index` (from 1) of a schema form: its name, and its kind and choices."""
    row = form.get_by_role("group", name=re.compile(f"field {index}$"))
    row.get_by_label("Field name").fill(name)
    row.get_by_label("Field name").press("Enter")
    if kind:
        row.get_by_label("Field type").select_option(label=kind)
    if choices:
        row.get_by_label("Choices (comma-separated)").fill(choices)
        row.get_by_label("Choices (comma-separated)").press("Enter")


def test_a_four_node_graph_built_in_the_browser_is_kept_stored_and_runs(tmp_path: Path, chromium: Any) -> None:
    script = tmp_path / "answers.yaml"
    script.write_text(yaml.safe_dump({"responses": [{"node": "classify", "output": {"label": "bug"}}]}))
    errors: list[str] = []
    for served in serve(tmp_path, script=script):
        context = chromium.new_context(viewport={"width": 1600, "height": 1000})
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        try:
            build(page, served.url)
            page.reload()  # everything so far is on the server, valid or not
            expect(node(page, "fix")).to_be_visible()
            expect(page.get_by_text("not stored yet")).to_be_visible()
            page.get_by_role("link", name="Graphs", exact=True).click()
            building = page.get_by_role("table", name="Graphs being built").locator('tr[data-draft="ticket_triage"]')
            expect(building).to_contain_text("Ticket triage")
            building.get_by_role("link", name="Ticket triage").click()
            expect(node(page, "fix")).to_be_visible()

            page.get_by_role("button", name="Validate").click()
            expect(page.get_by_role("status").filter(has_text="valid")).to_have_text("The graph is valid.")
            page.get_by_role("button", name="Save…").click()
            page.get_by_test_id("save-preview").get_by_role("button", name="Store version 1").click()
            expect(page.get_by_role("status").filter(has_text="Stored")).to_have_text("Stored version 1.")

            page.reload()
            expect(node(page, "classify")).to_be_visible()
            expect(page.get_by_label("Version")).to_have_value("1")
            expect(page.get_by_text("not stored yet")).to_have_count(0)
            assert served.client.get("/api/drafts/ticket_triage").status_code == 404  # stored: no draft left

            stored = served.client.get("/api/graphs/ticket_triage").json()
            assert stored["name"] == "Ticket triage"
            graph = stored["graph"]
            assert graph["description"] == "Labels a ticket and says what to fix."
            assert graph["input_schema"]["properties"]["text"] == {"type": "string", "description": "the ticket"}
            assert graph["input_schema"]["required"] == ["text"]
            label = next(s for s in graph["schemas"] if s["id"] == "classify_out")["schema"]
            assert label["properties"] == {"label": {"type": "string", "enum": ["bug", "praise"]}}

            page.get_by_role("button", name="Start a run…").click()
            run_form = page.get_by_role("form", name="Run input")
            run_form.locator('textarea[name="text"]').fill("the app crashes on start")
            run_form.get_by_role("button", name="Start").click()
            expect(page).to_have_url(re.compile(r"#/runs/"))
            expect(page.get_by_test_id("run-status")).to_have_text("completed", timeout=30_000)
            run_id = page.url.rsplit("/", 1)[1]
            output = served.client.get(f"/api/runs/{run_id}").json()["output"]
            assert output["fix"] == {"summary": "fix: the app crashes on start"}, output  # the bug branch ran
            assert output["route"] == {"branch": "bug"}, output
            assert not errors, errors
        finally:
            context.close()


def build(page: Any, url: str) -> None:
    """Everything a person does to build the graph, up to the moment it is valid."""
    page.goto(url + "/#/graphs")
    page.get_by_role("link", name="New graph").click()
    form = page.get_by_role("form", name="New graph")
    form.get_by_label("Name", exact=True).fill("Ticket triage")
    expect(form.get_by_label("Id", exact=True)).to_have_value("ticket_triage")  # made from the name
    form.get_by_label("Description", exact=True).fill("Labels a ticket and says what to fix.")
    run_input = form.get_by_role("group", name="Run input")
    row = run_input.get_by_role("group", name=re.compile("field 1$"))
    expect(row.get_by_label("Field name")).to_have_value("text")
    row.get_by_label("Field description").fill("the ticket")
    row.get_by_label("Field description").press("Enter")
    form.get_by_role("button", name="Create and open the canvas").click()

    expect(page).to_have_url(re.compile(r"#/graphs/ticket_triage$"))
    expect(page.get_by_text("not stored yet")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="No nodes yet")).to_be_visible()

    add(page, "LLM_CALL", "classify")
    type_into(page, "User prompt", "Is this ticket a bug or praise? {{ input.text }}")
    add(page, "CONDITION", "route")
    type_into(page, "Condition (JavaScript)", "nodes.classify.label")
    add(page, "TRANSFORM", "fix")
    type_into(page, "Transform (JavaScript)", "({summary: 'fix: ' + input.text})")
    expect(page.get_by_test_id("draft-state")).to_contain_text("not valid yet")  # kept anyway

    page.get_by_role("button", name="Fit View").click()  # END waits right of every node
    connect(page, "classify", "route")
    connect(page, "route", "fix")
    connect(page, "route", "END")
    page.get_by_role("button", name="Fit View").click()
    connect(page, "fix", "END")

    edge = select_edge(page, "classify__route")
    edge.get_by_role("button", name="New schema for this edge").click()
    schema = edge.get_by_role("group", name="Schema classify_out")
    edit_field(schema, 1, name="label", kind="one of (choice)", choices="bug, praise")

    edge = select_edge(page, "route__fix")
    edge.get_by_label("Condition key").fill("bug")
    edge.get_by_label("Condition key").press("Enter")
    edge = select_edge(page, "route__END")
    edge.get_by_label("Condition key").fill("praise")
    edge.get_by_label("Condition key").press("Enter")

    edge = select_edge(page, "fix__END")
    edge.get_by_role("button", name="New schema for this edge").click()
    edit_field(edge.get_by_role("group", name="Schema fix_out"), 1, name="summary")
    expect(page.get_by_test_id("draft-state")).to_have_text("draft kept")  # valid now, and on the server


def test_the_schema_form_edits_lists_of_objects_and_keeps_what_it_does_not_show(server: Any, page: Any) -> None:
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    page.goto(server.url + "/#/graphs/video_chapters")
    page.get_by_role("tab", name="Schemas").click()
    page.locator('[data-schema="clip_points"] summary').click()
    form = page.get_by_role("group", name="Schema clip_points", exact=True)
    clips = form.get_by_role("group", name=re.compile("field 1$"))
    expect(clips.get_by_label("Field name").first).to_have_value("clips")
    expect(clips.get_by_label("Field type").first).to_have_value("object[]")  # a list of objects
    reason = clips.get_by_role("group", name=re.compile(r"clips: field 2$"))
    expect(reason.get_by_label("Field name")).to_have_value("reason")
    expect(reason.get_by_label("Field type")).to_have_value("string")
    reason.get_by_label("Field description").fill("why this moment")
    reason.get_by_label("Field description").press("Enter")

    form.get_by_role("tab", name="JSON").click()
    written = json.loads(editor_text(page, "Schema clip_points as JSON"))
    item = written["properties"]["clips"]
    assert item["maxItems"] == 5  # not shown by the form, kept
    reason_schema = item["items"]["properties"]["reason"]
    assert reason_schema == {"type": "string", "description": "why this moment", "maxLength": 80}
    assert item["items"]["required"] == ["at_sec", "reason"]
    assert "additionalProperties" not in item["items"]  # nothing tightened that was not asked for

    # a schema the form cannot show opens as JSON and says why
    type_into(page, "Schema clip_points as JSON", json.dumps({"anyOf": [{"type": "string"}, {"type": "number"}]}))
    page.locator('[data-schema="transcript"] summary').click()
    page.locator('[data-schema="clip_points"] summary').click()
    page.locator('[data-schema="clip_points"] summary').click()
    expect(form.get_by_role("tab", name="Form")).to_be_disabled()
    expect(form).to_contain_text("edit it as JSON")
