"""What a newcomer meets first on the canvas, against a real `plait serve`: nodes placed at y 0
come back where they were put (not as an empty canvas), a canvas with no nodes says so instead
of "Laying out 0 nodes…" forever, the Save dialog of a graph the server refuses always closes,
a schema at its first version shows `v1.0.0`, not `v` with no version, unsaved edits survive a
reload, and a failed run says which node failed, why and what to do, in words a person in a
browser can act on (a short run id in the address opens the run)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import yaml
from playwright.sync_api import expect

from tests.web.conftest import Served, serve


def chain(graph_id: str, *nodes: dict[str, Any], schema: tuple[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """A graph of `nodes` one after the other, the last one to END; `schema` (id, JSON Schema) on
    every edge."""
    ids = [node["id"] for node in nodes] + ["END"]
    on_edges = {"schema_id": schema[0]} if schema else {}
    return {
        "plait": 1,
        "id": graph_id,
        **({"schemas": [{"id": schema[0], "schema": schema[1]}]} if schema else {}),
        "nodes": list(nodes),
        "edges": [{"source": a, "target": b, **on_edges} for a, b in itertools.pairwise(ids)],
    }


FLAT = chain(
    "flat",
    {"id": "first", "type": "TRANSFORM", "transform_expr": "({n: 1})", "position": {"x": 0, "y": 0}},
    {"id": "second", "type": "TRANSFORM", "transform_expr": "({n: 2})", "position": {"x": 300, "y": 0}},
)


def box(page: Any, node_id: str) -> Any:
    return page.locator(f'.box[data-node="{node_id}"]')


def test_nodes_at_y_zero_are_stored_in_full_and_drawn_where_they_were_put(server: Served, page: Any) -> None:
    server.import_graph(FLAT)
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
    server: Served, page: Any
) -> None:
    server.import_graph(FLAT)
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


def test_a_schema_at_the_first_version_shows_its_version(server: Served, page: Any) -> None:
    schema = {"id": "count", "schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}
    server.import_graph({**FLAT, "schemas": [schema]})  # no version: the first, 1.0.0
    assert server.client.get("/api/graphs/flat").json()["graph"]["schemas"][0]["version"] == "1.0.0"
    page.goto(server.url + "/#/graphs/flat")
    page.get_by_role("tab", name="Schemas").click()
    expect(page.locator('details[data-schema="count"] summary')).to_contain_text("count v1.0.0")


def test_unsaved_edits_survive_a_reload_and_a_run_started_meanwhile(server: Served, page: Any) -> None:
    server.import_graph(FLAT)
    page.goto(server.url + "/#/graphs/flat")
    expect(box(page, "first")).to_be_visible()
    page.get_by_role("button", name="Add TRANSFORM").click()
    expect(box(page, "transform_1")).to_be_visible()
    expect(page.get_by_text("unsaved changes")).to_be_visible()
    expect(page.get_by_test_id("draft-state")).to_have_text(re.compile("^draft kept"))  # on the server, as it was made

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


LABEL = {"type": "object", "properties": {"label": {"enum": ["bug", "praise"]}}, "required": ["label"]}
FAILING = chain(
    "failing",
    {"id": "classify", "type": "LLM_CALL", "user_prompt_tpl": "Label: {{ input.text }}"},
    schema=("label", LABEL),
)


def test_a_failed_run_says_which_node_failed_why_and_what_to_do_in_plain_words(tmp_path: Path, chromium: Any) -> None:
    script = tmp_path / "wrong.yaml"
    script.write_text(yaml.safe_dump({"responses": [{"node": "classify", "output": {"label": "weather"}}]}))
    for served in serve(tmp_path, script=script):
        served.import_graph(FAILING)
        run_id = served.start("failing", {"text": "it rains"})
        served.wait_status(run_id, "failed")
        context = chromium.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        try:
            # the short id the pages show opens the run, and the address then names it whole
            page.goto(f"{served.url}/#/runs/{run_id[:8]}")
            expect(page).to_have_url(re.compile(f"#/runs/{run_id}$"))
            banner = page.get_by_role("alert").filter(has_text="Node classify failed")
            expect(banner).to_be_visible()
            expect(banner).to_contain_text("What to do:")
            expect(banner).to_contain_text("weather")  # the answer the schema refused is named
            text = banner.inner_text()
            assert '{"' not in text, text  # words, not a JSON string
            assert "/api/" not in text, text

            # the attempt whose answer the schema refused says so, with the answer and why
            box(page, "classify").click()
            attempt = page.get_by_label("Attempts").locator('tr[data-attempt="1"]')
            expect(attempt).to_contain_text("rejected by the schema")
            expect(attempt).to_contain_text("'weather' is not one of ['bug', 'praise']")
            expect(attempt).not_to_contain_text("answered")

            page.goto(f"{served.url}/#/dashboard")
            expect(page.locator(".reason").filter(has_text="node classify failed")).to_be_visible()

            # an id that names no run: the hint names the page to look on, not a route
            page.goto(f"{served.url}/#/runs/ffff0000")
            missing = page.get_by_role("alert")
            expect(missing).to_contain_text("no run 'ffff0000'")
            expect(missing).to_contain_text("the Runs page lists the runs with their ids")
            assert "GET /api" not in missing.inner_text()
        finally:
            context.close()


TEXT = {"type": "object", "properties": {"text": {"type": "string", "description": "the text so far"}}}
CHAIN = chain(
    "chain",
    {"id": "draft", "type": "LLM_CALL", "user_prompt_tpl": "Draft {{ input.topic }}"},
    {"id": "polish", "type": "LLM_CALL", "user_prompt_tpl": "Polish {{ draft.text }}"},
    {"id": "publish", "type": "LLM_CALL", "user_prompt_tpl": "Publish {{ polish.text }}"},
    schema=("text", TEXT),
)


def test_template_completion_offers_every_upstream_node_and_its_fields(server: Served, page: Any) -> None:
    server.import_graph(CHAIN)
    page.goto(server.url + "/#/graphs/chain")
    box(page, "publish").click()
    prompt = page.get_by_label("User prompt", exact=True)
    prompt.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    prompt.fill("Publish {{ ")
    page.keyboard.press("Control+Space")
    options = page.locator(".cm-tooltip-autocomplete li")
    expect(options.filter(has_text="polish")).to_contain_text("upstream node")
    expect(options.filter(has_text="draft")).to_contain_text("further back")  # not a direct predecessor
    page.keyboard.press("Escape")
    page.keyboard.type("draft.")
    page.keyboard.press("Control+Space")
    expect(options.filter(has_text="text")).to_contain_text("string")  # the schema on draft's edge


def test_the_run_canvas_shows_a_waiting_review_and_staleness_reached_through_a_stale_node(
    server: Served, page: Any
) -> None:
    count = ("count", {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    server.import_graph(
        chain(
            "counting",
            {"id": "one", "type": "TRANSFORM", "transform_expr": "({n: 1})"},
            {"id": "two", "type": "TRANSFORM", "transform_expr": "({n: nodes.one.n + 1})"},
            {"id": "three", "type": "TRANSFORM", "transform_expr": "({n: nodes.two.n + 1})"},
            schema=count,
        )
    )
    server.import_graph(
        chain(
            "reviewed_count",
            {"id": "one", "type": "TRANSFORM", "transform_expr": "({n: 1})"},
            {"id": "check", "type": "HUMAN_REVIEW", "review_prompt": "Is it right?"},
            {"id": "after", "type": "TRANSFORM", "transform_expr": "({n: nodes.check.n})"},
            schema=count,
        )
    )

    counted = server.start("counting", {})
    server.wait_status(counted, "completed")
    corrected = server.client.post(
        f"/api/runs/{counted}/nodes/one/override", json={"value": {"n": 5}, "policy": "INVALIDATE"}
    )
    assert corrected.status_code == 200, corrected.text
    page.goto(f"{server.url}/#/runs/{counted}")
    expect(box(page, "two")).to_have_attribute("data-status", "stale")  # read the corrected value
    expect(box(page, "three")).to_have_attribute("data-status", "stale")  # through two
    expect(box(page, "one")).not_to_have_attribute("data-status", "stale")

    waiting = server.start("reviewed_count", {})
    server.wait_status(waiting, "paused")
    page.goto(f"{server.url}/#/runs/{waiting}")
    expect(box(page, "check")).to_have_attribute("data-status", "waiting")
    expect(box(page, "check").locator(".box-status")).to_have_text("waiting for a person")
    expect(box(page, "after")).to_have_attribute("data-status", "")  # not started: no status at all


def test_the_palette_says_what_each_node_does_and_tidy_layout_forgets_placements(server: Served, page: Any) -> None:
    server.import_graph(FLAT)
    page.goto(server.url + "/#/graphs/flat")
    palette = page.get_by_role("navigation", name="Node types")
    review = palette.get_by_role("button", name="Add HUMAN_REVIEW")
    expect(review).to_have_accessible_description("Pauses the run until a person approves or corrects the value.")
    expect(palette.get_by_role("button", name="Add TRANSFORM")).to_contain_text("JavaScript expression")
    expect(palette.get_by_role("button")).to_have_count(15)  # every node type

    before = box(page, "second").bounding_box()
    page.get_by_role("button", name="Tidy layout").click()
    expect(page.get_by_role("button", name="Tidy layout")).to_be_disabled()  # nothing placed by hand now
    page.get_by_role("tab", name="YAML").click()
    expect(page.get_by_label("Graph YAML", exact=True)).not_to_contain_text("position")
    after = box(page, "second").bounding_box()
    assert before is not None
    assert after is not None
    assert before != after  # laid out again, not where it was put
    page.get_by_role("button", name="Undo").click()
    expect(page.get_by_role("button", name="Tidy layout")).to_be_enabled()


def test_banners_never_push_the_canvas_below_the_fold_and_edges_run_square(server: Served, page: Any) -> None:
    nodes = [{"id": f"n{i}", "type": "LLM_CALL", "user_prompt_tpl": f"Use {{{{ missing{i}.text }}}}"} for i in range(8)]
    broken = chain("banners", *nodes)  # every prompt names a node that does not exist: 8 problems
    assert server.client.put("/api/drafts/banners", json={"graph": broken}).status_code == 200
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(server.url + "/#/graphs/banners")
    expect(box(page, "n0")).to_be_visible()
    page.get_by_role("button", name="Validate").click()
    expect(page.get_by_label("Validation").locator("li")).to_have_count(8)

    canvas = page.get_by_test_id("canvas")
    frame = canvas.bounding_box()
    assert frame is not None
    assert frame["height"] >= 300  # the canvas keeps its room under the banners
    page.locator("main").evaluate("m => m.scrollTo(0, m.scrollHeight)")  # a short window scrolls to it
    frame = canvas.bounding_box()
    assert frame is not None
    assert frame["y"] + frame["height"] <= 720 + 1, frame  # its bottom in the window, not below the fold

    # edges run in horizontal and vertical segments, around boxes rather than through them
    expect(page.locator(".react-flow__edge").first).to_have_class(re.compile(r"react-flow__edge-smoothstep"))
