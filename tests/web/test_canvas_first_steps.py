"""What a newcomer meets first on the canvas, against a real `plait serve`: nodes placed at y 0
come back where they were put (not as an empty canvas), a canvas with no nodes says so instead
of "Laying out 0 nodes…" forever, the Save dialog of a graph the server refuses always closes,
and a schema at its first version shows `v1.0.0`, not `v` with no version."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from playwright.sync_api import expect

from tests.web.conftest import Served

FLAT = {
    "plait": 1,
    "id": "flat",
    "name": "Flat",
    "nodes": [
        {"id": "first", "type": "TRANSFORM", "transform_expr": "({n: 1})", "position": {"x": 0, "y": 0}},
        {"id": "second", "type": "TRANSFORM", "transform_expr": "({n: 2})", "position": {"x": 300, "y": 0}},
    ],
    "edges": [{"source": "first", "target": "second"}, {"source": "second", "target": "END"}],
}


def box(page: Any, node_id: str) -> Any:
    return page.locator(f'.box[data-node="{node_id}"]')


def test_nodes_at_y_zero_are_stored_in_full_and_drawn_where_they_were_put(
    server: Served, page: Any, tmp_path: Path
) -> None:
    source = tmp_path / "flat.yaml"
    source.write_text(yaml.safe_dump(FLAT))
    server.import_graph(source)
    stored = server.client.get("/api/graphs/flat").json()["graph"]
    assert [n["position"] for n in stored["nodes"]] == [{"x": 0, "y": 0}, {"x": 300, "y": 0}]

    page.goto(server.url + "/#/graphs/flat")
    for node_id in ("first", "second"):
        expect(box(page, node_id)).to_be_visible()
    transforms = page.locator(".react-flow__node").evaluate_all("nodes => nodes.map(n => n.style.transform)")
    assert len(transforms) == 3, transforms  # the two nodes and END
    assert not any("NaN" in t for t in transforms), transforms
    # side by side on one row, as placed
    first, second = (box(page, n).bounding_box() for n in ("first", "second"))
    assert first is not None
    assert second is not None
    assert abs(first["y"] - second["y"]) < 2
    assert second["x"] > first["x"]


def test_an_emptied_canvas_says_it_has_no_nodes_and_the_save_dialog_of_a_refused_graph_closes(
    server: Served, page: Any, tmp_path: Path
) -> None:
    source = tmp_path / "flat.yaml"
    source.write_text(yaml.safe_dump(FLAT))
    server.import_graph(source)
    page.goto(server.url + "/#/graphs/flat")
    expect(box(page, "first")).to_be_visible()

    # remove every node: the canvas says so, and is not stuck "laying out"
    for node_id in ("first", "second"):  # END goes with the last edge to it
        box(page, node_id).click()
        page.keyboard.press("Delete")
    expect(page.get_by_role("status").filter(has_text="No nodes yet")).to_be_visible()
    expect(page.get_by_text(re.compile("Laying out"))).to_have_count(0)
    expect(page.get_by_test_id("canvas")).to_have_attribute("data-nodes", "0")

    # a graph without nodes is refused by the server's preview: the dialog still closes, three ways
    dialog = page.get_by_role("dialog", name="Save")
    for close in (
        lambda: dialog.get_by_role("button", name="Close").click(),
        lambda: page.keyboard.press("Escape"),
        lambda: page.get_by_test_id("dialog-backdrop").click(position={"x": 5, "y": 5}),
    ):
        page.get_by_role("button", name="Save…").click()
        expect(dialog.get_by_role("alert")).to_be_visible()  # why it was refused
        expect(dialog.get_by_test_id("save-preview")).to_have_count(0)
        close()
        expect(dialog).to_have_count(0)


def test_a_schema_at_the_first_version_shows_its_version(server: Served, page: Any, tmp_path: Path) -> None:
    source = tmp_path / "flat.yaml"
    schema = {"id": "count", "schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    source.write_text(yaml.safe_dump({**FLAT, "schemas": [schema]}))  # no version: the first, 1.0.0
    server.import_graph(source)
    assert server.client.get("/api/graphs/flat").json()["graph"]["schemas"][0]["version"] == "1.0.0"
    page.goto(server.url + "/#/graphs/flat")
    page.get_by_role("tab", name="Schemas").click()
    expect(page.locator('details[data-schema="count"] summary')).to_contain_text("count v1.0.0")


def test_unsaved_edits_survive_a_reload_and_a_run_started_meanwhile(server: Served, page: Any, tmp_path: Path) -> None:
    source = tmp_path / "flat.yaml"
    source.write_text(yaml.safe_dump(FLAT))
    server.import_graph(source)
    page.goto(server.url + "/#/graphs/flat")
    expect(box(page, "first")).to_be_visible()
    page.get_by_label("Node type").select_option("TRANSFORM")
    page.get_by_role("button", name="Add node").click()
    expect(box(page, "transform_1")).to_be_visible()
    expect(page.get_by_text("unsaved changes")).to_be_visible()

    page.reload()
    expect(box(page, "transform_1")).to_be_visible()
    expect(page.get_by_text(re.compile("Restored your unsaved edits .* made on version 1"))).to_be_visible()

    # a run executes the stored version, and says so before it starts; the edit stays
    page.get_by_role("button", name="Start a run…").click()
    expect(page.get_by_role("note")).to_contain_text("not part of this run: it runs the stored version 1")
    page.get_by_role("button", name="Start version 1 without my edits").click()
    expect(page).to_have_url(re.compile(r"#/runs/"))
    page.goto(server.url + "/#/graphs/flat")
    expect(box(page, "transform_1")).to_be_visible()

    page.get_by_role("button", name="Discard edits").click()
    expect(box(page, "transform_1")).to_have_count(0)
    page.reload()
    expect(box(page, "first")).to_be_visible()
    expect(box(page, "transform_1")).to_have_count(0)
    expect(page.get_by_text("unsaved changes")).to_have_count(0)
