"""Edges on the canvas go around the boxes, against a real `plait serve`: each follows the route
the layout found for it, so no edge runs through a box other than its own two; once a node is
dragged its edges still meet the handles (drawn as smooth steps, the route no longer fitting),
and "Tidy layout" brings the routes back. Every geometry is read from the page: the points of
each edge's SVG path and the boxes' and handles' rectangles, all in screen pixels."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import Served

# A chain a → b → c → d with a shortcut a → d, and a branch a → side → END beside it: laid out by
# levels, b and c sit between a and d, in the way of a shortcut drawn without a route.
STEPS = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("a", "side"), ("side", "END"), ("d", "END")]
DETOUR = {
    "plait": 1,
    "id": "detour",
    "nodes": [{"id": n, "type": "TRANSFORM", "transform_expr": "({n: 1})"} for n in ("a", "b", "c", "d", "side")],
    "edges": [{"source": s, "target": t, **({"label": "shortcut"} if (s, t) == ("a", "d") else {})} for s, t in STEPS],
}
# How far (screen px) an edge's end may be from its handle's centre: React Flow ends an edge on
# the handle's outer side, half a handle (3 px at zoom 1) off its centre.
NEAR = 5

# Each edge's id and the points of its path every 2 px (and its last), the boxes' rectangles and
# the handles' centres, in screen pixels: a path's points through its own transform to the screen.
GEOMETRY = """() => {
  const centre = (el) => { const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; };
  const boxes = {};
  const handles = {};
  for (const box of document.querySelectorAll('.box[data-node]')) {
    const r = box.getBoundingClientRect();
    boxes[box.dataset.node] = [r.left, r.top, r.right, r.bottom];
    const source = box.querySelector('.react-flow__handle.source');
    const target = box.querySelector('.react-flow__handle.target');
    handles[box.dataset.node] = { source: source && centre(source), target: target && centre(target) };
  }
  const edges = [...document.querySelectorAll('.react-flow__edge')].map((edge) => {
    const path = edge.querySelector('path.react-flow__edge-path');
    const toScreen = path.getScreenCTM();
    const total = path.getTotalLength();
    const points = [];
    for (let at = 0; at < total; at += 2) points.push(path.getPointAtLength(at));
    points.push(path.getPointAtLength(total));
    const label = edge.querySelector('.react-flow__edge-text');
    return {
      id: edge.dataset.id,
      points: points.map((p) => { const s = p.matrixTransform(toScreen); return [s.x, s.y]; }),
      label: label && centre(label),
    };
  });
  return { boxes, handles, edges };
}"""

# True once all of the graph's edges are drawn and each one's ends are on its handles.
CONNECTED = f"""([count, near]) => {{
  const g = ({GEOMETRY})();
  const on = (p, q) => q && Math.abs(p[0] - q[0]) <= near && Math.abs(p[1] - q[1]) <= near;
  return g.edges.length === count && g.edges.every((e) => {{
    const [from, to] = e.id.split('__');
    return on(e.points[0], g.handles[from]?.source) && on(e.points[e.points.length - 1], g.handles[to]?.target);
  }});
}}"""


def geometry(page: Any) -> dict[str, Any]:
    return dict(page.evaluate(GEOMETRY))


def wait_connected(page: Any) -> dict[str, Any]:
    """The geometry once every edge is drawn and meets both its handles (they are drawn once the
    boxes are measured, and follow a dragged box as it lands)."""
    page.wait_for_function(CONNECTED, arg=[len(STEPS), NEAR])
    return geometry(page)


def through_boxes(drawn: dict[str, Any]) -> list[str]:
    """Each edge's points inside a box other than its own two ends, described."""
    found = []
    for edge in drawn["edges"]:
        ends = set(edge["id"].split("__"))
        for node_id, (left, top, right, bottom) in drawn["boxes"].items():
            inside = [(x, y) for x, y in edge["points"] if left + 1 < x < right - 1 and top + 1 < y < bottom - 1]
            if node_id not in ends and inside:
                found.append(f"{edge['id']} runs through {node_id} at {inside[0]}")
    return found


def test_edges_go_around_boxes_and_still_meet_their_handles_after_a_drag(server: Served, page: Any) -> None:
    server.import_graph(DETOUR)
    page.set_viewport_size({"width": 2400, "height": 1000})  # the whole graph in view, readable
    page.goto(server.url + "/#/graphs/detour")
    expect(page.locator(".box[data-node='END']")).to_be_visible()

    drawn = wait_connected(page)
    assert sorted(e["id"] for e in drawn["edges"]) == sorted(f"{s}__{t}" for s, t in STEPS)
    assert through_boxes(drawn) == []
    # the shortcut really passes the column of b and c: below or above them, not between
    shortcut = next(e for e in drawn["edges"] if e["id"] == "a__d")
    b_left, b_top, b_right, b_bottom = drawn["boxes"]["b"]
    beside_b = [y for x, y in shortcut["points"] if b_left <= x <= b_right]
    assert beside_b, shortcut["points"]
    assert all(y >= b_bottom or y <= b_top for y in beside_b)
    # its label sits on it
    assert shortcut["label"] is not None
    assert any(abs(x - shortcut["label"][0]) <= 2 and abs(y - shortcut["label"][1]) <= 2 for x, y in shortcut["points"])

    # An edge drawn along its route can still be picked with the mouse, on its line.
    x, y = shortcut["points"][len(shortcut["points"]) // 4]
    page.mouse.click(x, y)
    expect(page.get_by_test_id("edge-form")).to_contain_text("a__d")

    # Dragged down, b takes its edges with it: each still meets both its handles.
    before = page.locator(".box[data-node='b']").bounding_box()
    assert before is not None
    page.mouse.move(before["x"] + before["width"] / 2, before["y"] + before["height"] / 2)
    page.mouse.down()
    page.mouse.move(before["x"] + before["width"] / 2 + 30, before["y"] + 200, steps=12)
    page.mouse.up()
    expect(page.get_by_role("button", name="Tidy layout")).to_be_enabled()  # b is placed by hand now
    moved = wait_connected(page)
    assert moved["boxes"]["b"][1] > before["y"] + 100, moved["boxes"]["b"]

    # Tidied, b is back in its column and the edges follow their routes around the boxes again.
    page.get_by_role("button", name="Tidy layout").click()
    expect(page.get_by_role("button", name="Tidy layout")).to_be_disabled()
    page.wait_for_function(
        "([top]) => Math.abs(document.querySelector('.box[data-node=\"b\"]').getBoundingClientRect().top - top) < 1",
        arg=[before["y"]],
    )
    tidied = wait_connected(page)
    assert through_boxes(tidied) == []
