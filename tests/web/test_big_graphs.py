"""A big graph in the browser: laid out in one pass (ELK's first layout in a fresh worker takes
seconds), every node in view drawn as a light box while the view is zoomed out, and drawn
whole, with its label, once zoomed in. The timings are measured by bench/workbench.py."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import Served

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from workbench import layered

_node_id = re.compile(r"^n\d+$")


def test_a_300_node_graph_is_drawn_light_then_whole(server: Served, page: Any) -> None:
    graph = layered(300)
    response = server.client.post("/api/graphs/import", json={"graph": graph})
    assert response.status_code == 201, response.text
    page.goto(f"{server.url}/#/graphs/big_300")
    nodes = page.locator(".react-flow__node")
    expect(nodes).to_have_count(300)  # all of them fit the view: all are drawn
    expect(page.locator(".box.far")).to_have_count(300)
    expect(page.locator(".box-label")).to_have_count(0)
    # Levels become columns: n0 and n10 (its reader) side by side, n0 and n1 one above the other.
    x0, x10 = (page.locator(f'.react-flow__node[data-id="n{i}"]').bounding_box()["x"] for i in (0, 10))
    assert x10 > x0
    for _ in range(14):
        page.get_by_role("button", name="zoom in").click()
    expect(page.locator(".box.far")).to_have_count(0)
    labels = page.locator(".box-label")
    expect(labels.first).to_have_text(_node_id)
    assert 0 < nodes.count() < 300  # zoomed in, the nodes out of view are not drawn at all
