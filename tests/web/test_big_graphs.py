"""A big graph in the browser: laid out in one pass (ELK's first layout in a fresh worker takes
seconds), first shown readable (labels at 11 px or more, the rest a scroll away), every node in view
drawn as a light box while the view is zoomed out to fit, and drawn
whole, with its label, once zoomed in. The timings are measured by bench/workbench.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import Served

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from workbench import LABEL_PX, layered

_node_id = re.compile(r"^n\d+$")


def test_a_300_node_graph_is_drawn_light_then_whole(server: Served, page: Any) -> None:
    graph = layered(300)
    response = server.client.post("/api/graphs/import", json={"graph": graph})
    assert response.status_code == 201, response.text
    page.goto(f"{server.url}/#/graphs/big_300")
    nodes = page.locator(".react-flow__node")
    # The first view is readable: labels at 11 px or more, the graph's beginning in view, the rest
    # a scroll away (not drawn).
    expect(page.locator('.react-flow__node[data-id="n0"] .box-label')).to_be_visible()
    assert page.evaluate(LABEL_PX) >= 11
    assert 0 < nodes.count() < 300
    viewport = page.locator(".react-flow__viewport")
    before = viewport.get_attribute("style")
    page.locator(".react-flow__pane").hover()
    page.mouse.wheel(0, 400)  # the wheel scrolls the view; it does not shrink it
    expect(viewport).not_to_have_attribute("style", before)
    assert page.evaluate(LABEL_PX) >= 11

    page.get_by_role("button", name="Fit View").click()
    expect(nodes).to_have_count(301)  # all of them fit the view: all are drawn (and END, to connect to)
    expect(page.locator(".box.far")).to_have_count(301)
    expect(page.locator(".box-label")).to_have_count(0)
    # Zoomed out, the edges are one path, not an element each.
    expect(page.locator(".far-edges path")).to_have_count(1)
    expect(page.locator(".react-flow__edge")).to_have_count(0)
    assert page.locator(".far-edges path").get_attribute("d").count("M") == len(graph["edges"])
    # Levels become columns: n0 and n10 (its reader) side by side, n0 and n1 one above the other.
    x0, x10 = (page.locator(f'.react-flow__node[data-id="n{i}"]').bounding_box()["x"] for i in (0, 10))
    assert x10 > x0
    for _ in range(14):
        page.get_by_role("button", name="zoom in").click()
    expect(page.locator(".box.far")).to_have_count(0)
    expect(page.locator(".far-edges")).to_have_count(0)
    expect(page.locator(".react-flow__edge").first).to_be_attached()  # each edge its own, pickable
    labels = page.locator(".box-label")
    expect(labels.first).to_have_text(_node_id)
    assert 0 < nodes.count() < 301  # zoomed in, the nodes out of view are not drawn at all


OVERVIEW_COLOURS = """
(canvas) => {
  const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
  const seen = {};
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] < 255) continue;
    const hex = "#" + [data[i], data[i + 1], data[i + 2]].map((v) => v.toString(16).padStart(2, "0")).join("");
    seen[hex] = (seen[hex] ?? 0) + 1;
  }
  return seen;
}
"""


def test_the_overview_colours_nodes_by_status_and_moves_the_view(server: Served, page: Any) -> None:
    graph = layered(40)  # TRANSFORM nodes only: the run needs no model
    assert server.client.post("/api/graphs/import", json={"graph": graph}).status_code == 201
    run_id = server.start("big_40", {})
    server.wait_status(run_id, "completed")
    page.goto(f"{server.url}/#/runs/{run_id}")
    page.get_by_role("button", name="Fit View").click()
    expect(page.locator('.box[data-status="completed"]')).to_have_count(40)
    overview = page.get_by_role("img", name=re.compile(r"^Overview of 40 nodes"))
    colours = overview.evaluate(OVERVIEW_COLOURS)
    assert colours.get("#2da44e", 0) > 40  # every box is a completed (green) dot
    assert colours.get("#b1b1b7", 0) == 0  # and none is left uncoloured
    viewport = page.locator(".react-flow__viewport")
    for _ in range(6):
        page.get_by_role("button", name="zoom in").click()
    before = viewport.get_attribute("style")
    first_box = page.locator('.react-flow__node[data-id="n0"]')
    box = overview.bounding_box()
    assert box is not None
    overview.click(position={"x": box["width"] - 4, "y": box["height"] / 2})  # the graph's far right
    expect(viewport).not_to_have_attribute("style", before)
    expect(first_box).to_have_count(0)  # n0 is in the first column: out of view, not drawn
