"""Editing on the canvas in the browser, against a real `plait serve`: add and connect a node,
see a validation error pinned on it, fix it, save a breaking schema change and see its
classification first, then meet a concurrent save as a 409 with a three-way view; undo and
redo; the YAML view in step with the canvas; forking the shipped system graph and merging a
parent change."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from playwright.sync_api import expect

from tests.web.conftest import EXAMPLES, Served


def node(page: Any, node_id: str) -> Any:
    return page.locator(f'.box[data-node="{node_id}"]')


def type_into(page: Any, label: str, text: str) -> None:
    """Replace the text of the CodeMirror editor labelled `label`."""
    editor = page.get_by_label(label, exact=True)
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    editor.fill(text)


def editor_text(page: Any, label: str) -> str:
    """The whole text of a CodeMirror editor (it draws only the lines in view), found from its
    content element the way CodeMirror's own `EditorView.findFromDOM` finds it."""
    return str(page.get_by_label(label, exact=True).evaluate("el => el.cmTile.root.view.state.doc.toString()"))


def connect(page: Any, source: str, target: str) -> None:
    node(page, source).locator(".react-flow__handle.source").drag_to(
        node(page, target).locator(".react-flow__handle.target")
    )


def test_edit_validate_save_and_meet_a_concurrent_save(server: Served, page: Any) -> None:
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    page.goto(server.url + "/#/graphs/video_chapters")
    expect(node(page, "chapter_split")).to_be_visible()  # the graph's beginning, readable

    # Add an LLM_CALL and connect chapter_split to it by dragging between their handles.
    page.get_by_role("button", name="Add LLM_CALL").click()
    expect(node(page, "llm_call_1")).to_be_visible()
    page.get_by_role("button", name="Undo").click()
    expect(node(page, "llm_call_1")).to_have_count(0)
    page.get_by_role("button", name="Redo").click()
    expect(node(page, "llm_call_1")).to_be_visible()
    node(page, "llm_call_1").click()
    connect(page, "chapter_split", "llm_call_1")
    expect(page.locator('.react-flow__edge[data-id="chapter_split__llm_call_1"]')).to_have_count(1)

    # A prompt that reads a node that is not upstream: validation pins the error on the node.
    node(page, "llm_call_1").click()
    type_into(page, "User prompt", "Summarise {{ subtitles.lines }}")
    page.get_by_role("button", name="Validate").click()
    expect(node(page, "llm_call_1").locator(".box-problems")).to_have_text("⚠ 1")
    expect(page.get_by_label("Validation")).to_contain_text("not_upstream")
    expect(page.get_by_test_id("node-form")).to_contain_text("'subtitles', which is not upstream")

    # Fix it, with the template path completed from the upstream node's name.
    type_into(page, "User prompt", "Summarise {{ chapter_")
    expect(page.locator(".cm-tooltip-autocomplete")).to_contain_text("chapter_split")
    page.wait_for_timeout(200)  # the editor ignores keys for a moment after the list opens
    page.keyboard.press("Enter")
    page.keyboard.type(".chapters }}")
    page.get_by_role("button", name="Validate").click()
    expect(page.get_by_role("status").filter(has_text="valid")).to_have_text("The graph is valid.")
    expect(node(page, "llm_call_1").locator(".box-problems")).to_have_count(0)

    # The YAML view shows the edit, and an edit there shows on the canvas.
    page.get_by_role("tab", name="YAML").click()
    text = editor_text(page, "Graph YAML")
    assert "user_prompt_tpl: Summarise {{ chapter_split.chapters }}" in text
    type_into(page, "Graph YAML", text.replace("label: Split into chapters", "label: Chapters"))
    expect(node(page, "chapter_split").locator(".box-label")).to_have_text("Chapters")

    # A breaking schema change: clip_points may hold fewer clips than before.
    page.get_by_role("tab", name="Schemas").click()
    page.locator('[data-schema="clip_points"] summary').click()
    schema = {
        "type": "object",
        "properties": {
            "clips": {
                "type": "array",
                "maxItems": 2,
                "items": {
                    "type": "object",
                    "properties": {"at_sec": {"type": "number"}, "reason": {"type": "string", "maxLength": 80}},
                    "required": ["at_sec", "reason"],
                },
            }
        },
        "required": ["clips"],
    }
    page.locator('[data-schema="clip_points"]').get_by_role("tab", name="JSON").click()
    type_into(page, "Schema clip_points as JSON", json.dumps(schema))
    page.get_by_role("button", name="Save…").click()
    preview = page.get_by_test_id("save-preview")
    expect(preview).to_contain_text("Stores version 2")
    expect(preview).to_contain_text("major")
    expect(preview.get_by_label("Schema changes")).to_contain_text("clip_points changed: major 1.0.0 → 2.0.0")
    expect(preview).to_contain_text("maxItems tightened from <= 5 to <= 2")
    assert server.client.get("/api/graphs/video_chapters").json()["version"] == 1  # a preview stores nothing

    # Meanwhile someone else saves: the save is refused and the three versions are shown.
    theirs = yaml.safe_load((EXAMPLES / "video_chapters.yaml").read_text())
    theirs["description"] = "Edited elsewhere."
    assert server.client.put("/api/graphs/video_chapters", json={"graph": theirs, "base_version": 1}).status_code == 200
    preview.get_by_role("button", name="Store version 2").click()
    three_way = page.get_by_test_id("three-way")
    expect(three_way.get_by_role("alert")).to_contain_text("Someone saved version 2 after you started from version 1")
    expect(three_way.get_by_role("region", name="Theirs: version 2 (saved since)")).to_contain_text("Edited elsewhere.")
    expect(three_way.get_by_role("region", name="Mine: your edit")).to_contain_text("llm_call_1")
    assert server.client.get("/api/graphs/video_chapters").json()["graph"]["description"] == "Edited elsewhere."
    three_way.get_by_role("button", name="Keep mine over version 2").click()
    expect(page.get_by_role("status").filter(has_text="Stored")).to_have_text("Stored version 3.")
    stored = server.client.get("/api/graphs/video_chapters").json()
    assert stored["version"] == 3
    assert "llm_call_1" in [n["id"] for n in stored["graph"]["nodes"]]
    assert next(n for n in stored["graph"]["nodes"] if n["id"] == "llm_call_1")["position"] is not None

    # The version history diffs any two versions.
    page.get_by_role("tab", name="Versions").click()
    page.get_by_label("Older version").select_option("2")
    page.get_by_label("Newer version").select_option("3")
    expect(page.get_by_test_id("version-diff")).to_contain_text("+   - id: llm_call_1")
    expect(page.get_by_test_id("version-diff")).not_to_contain_text("updated_at")  # what a person changed only


def test_fork_the_system_graph_and_merge_a_parent_change(server: Served, page: Any) -> None:
    page.goto(server.url + "/#/graphs/plait.video_chapters")
    expect(page.get_by_text("read-only")).to_be_visible()
    page.get_by_role("tab", name="Versions").click()
    page.get_by_label("Fork id").fill("my_chapters")
    page.get_by_role("button", name="Fork this graph").click()
    expect(page.locator("h1")).to_contain_text("my_chapters")

    # The parent moves on (as a new release of Plait would ship it); the fork sees what changed.
    parent = server.client.get("/api/graphs/plait.video_chapters").json()["graph"]
    parent["nodes"][1]["system_prompt"] = "You split transcripts into at most five chapters."
    changed = _store_system_version(server, parent)
    assert changed == 2
    page.goto(server.url + "/#/graphs")
    fork_row = page.locator('tr[data-graph="my_chapters"]')
    expect(fork_row.locator(".badge").first).to_have_text("fork")
    expect(fork_row.locator(".badge.warn")).to_have_text("parent updated")
    fork_row.get_by_role("link", name="Video chapter analysis").click()
    page.get_by_role("tab", name="Versions").click()
    panel = page.get_by_test_id("fork-panel")
    expect(panel).to_contain_text("the parent is at version 2 (it moved on)")
    changed_prompt = panel.locator('tr[data-item="chapter_split"] [data-field="system_prompt"]')
    expect(changed_prompt).to_contain_text('parent "You split transcripts into at most five chapters."')  # the values
    panel.get_by_label("Merge chapter_split").check()
    panel.get_by_role("button", name="Merge chosen parent changes").click()
    expect(panel.get_by_role("status")).to_contain_text("Merged: stored fork version 2.")
    fork = server.client.get("/api/graphs/my_chapters").json()
    prompt = next(n for n in fork["graph"]["nodes"] if n["id"] == "chapter_split")["system_prompt"]
    assert prompt == "You split transcripts into at most five chapters."


def _store_system_version(server: Served, graph: dict[str, Any]) -> int:
    """A new version of the shipped graph, stored as the system-graph sync stores one."""
    from plait.evolve.save import save_graph
    from plait.model import GraphDef
    from plait.store import Store

    with Store(server.db) as store:
        saved = save_graph(store, GraphDef.model_validate(graph), source_type="system")
    return saved.stored.version


def test_the_workflow_node_types_show_their_fields(server: Served, page: Any) -> None:
    server.import_graph(EXAMPLES / "text_report.yaml")
    page.goto(server.url + "/#/graphs/text_report")
    expect(node(page, "count")).to_have_class(re.compile(r"\btype-tool\b"))
    node(page, "count").click()
    label = "Command (the program, then one argument per line)"
    assert editor_text(page, label) == "wc\n-w"
    assert editor_text(page, "Standard input") == "{{ input.text }}"
    node(page, "report").click()
    expect(page.get_by_label("Language (js or python)")).to_have_value("python")
    assert editor_text(page, "Code").startswith("def main(input, nodes):")

    # A new TOOL node: its argv edited one argument per line becomes the list in the YAML.
    page.get_by_role("button", name="Add TOOL").click()
    node(page, "tool_1").click()
    type_into(page, label, "date\n+%Y")
    page.get_by_role("tab", name="YAML").click()
    added = next(n for n in yaml.safe_load(editor_text(page, "Graph YAML"))["nodes"] if n["id"] == "tool_1")
    assert added["command"] == ["date", "+%Y"]


def test_map_and_loop_nodes_show_their_fields_and_start_with_a_body(server: Served, page: Any) -> None:
    server.import_graph(EXAMPLES / "refine_draft.yaml")
    page.goto(server.url + "/#/graphs/refine_draft")
    node(page, "refine").click()
    assert editor_text(page, "Repeat while (JavaScript)") == "last === null || !last.approved"
    expect(page.get_by_label("Most iterations")).to_have_value("4")
    expect(page.get_by_label("At the limit (fail or stop)")).to_have_value("stop")

    page.get_by_role("button", name="Add MAP").click()
    node(page, "map_1").click()
    expect(page.get_by_label("Items (path of the list)")).to_have_value("input.items")
    page.get_by_role("tab", name="YAML").click()
    added = next(n for n in yaml.safe_load(editor_text(page, "Graph YAML"))["nodes"] if n["id"] == "map_1")
    assert added["body"]["nodes"][0]["type"] == "TRANSFORM"  # a valid graph from the first moment
