"""Stored skills in the browser against a real `plait serve`: the Skills page lists a skill added
through the API and filters by tag, category and text as the API does; a skill's page shows its
parameters, its versions (an older one opened and shown as it was) and its graph; and on the
canvas a skill dragged from the palette becomes a SKILL node pinned to its version with its
inputs from the parameters' defaults, which saves and runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.web.conftest import Served
from tests.web.test_accessibility import violations
from tests.web.test_canvas import connect, node


def _skill_graph(greeting: str) -> dict[str, Any]:
    """A skill's graph: one TRANSFORM that greets `input.who`."""
    return {
        "id": "greet",
        "nodes": [{"id": "say", "type": "TRANSFORM", "transform_expr": f"({{text: '{greeting} ' + input.who}})"}],
        "edges": [{"source": "say", "target": "END"}],
    }


PARAMETERS = [
    {"name": "who", "schema": {"type": "string"}, "default": "world", "description": "Whom to greet."},
    {"name": "times", "schema": {"type": "integer", "minimum": 1}, "default": 1},
]
HOST = {
    "id": "host",
    "name": "Host",
    "nodes": [{"id": "start", "type": "TRANSFORM", "transform_expr": "({ready: true})", "position": {"x": 0, "y": 0}}],
    "edges": [{"source": "start", "target": "END"}],
}


def _add_skills(server: Served) -> None:
    """`greet` (v1, then v2 with another greeting) and `shout`, in other tags and categories."""
    body = {"name": "greet", "description": "Greets someone by name.", "tags": ["text", "demo"],
            "category": "writing", "parameters": PARAMETERS, "graph": _skill_graph("Hello")}  # fmt: skip
    made = server.client.post("/api/skills", json=body)
    assert made.status_code == 201, made.text
    changed = {**body, "graph": _skill_graph("Good morning"), "note": "a warmer greeting"}
    del changed["name"]
    updated = server.client.put("/api/skills/greet", json=changed)
    assert updated.status_code == 200, updated.text
    assert updated.json()["version"] == 2
    other = {"name": "shout", "description": "Says it loudly.", "tags": ["loud"], "category": "fun",
             "parameters": [], "graph": {**_skill_graph("HEY"), "id": "shout"}}  # fmt: skip
    assert server.client.post("/api/skills", json=other).status_code == 201


def test_the_skills_page_lists_filters_and_shows_a_skill(server: Served, page: Any) -> None:
    _add_skills(server)
    page.goto(server.url + "/")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Skills").click()
    expect(page).to_have_url(f"{server.url}/#/skills")
    table = page.get_by_role("table", name="Skills")
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(2)
    greet = table.locator('tr[data-skill="greet"] td')
    expect(greet).to_have_text(
        ["greet", "v2", "writing", "textdemo", "who, times", "Greets someone by name.", re.compile(".")]
    )
    assert violations(page) == []

    # Each filter narrows the list as the API does.
    page.get_by_label("Tag").select_option("loud")
    expect(rows).to_have_count(1)
    expect(table.locator('tr[data-skill="shout"]')).to_be_visible()
    page.get_by_label("Tag").select_option("")
    page.get_by_label("Category").select_option("writing")
    expect(rows).to_have_count(1)
    expect(table.locator('tr[data-skill="greet"]')).to_be_visible()
    page.get_by_label("Category").select_option("")
    page.get_by_label("Text").fill("loudly")
    expect(rows).to_have_count(1)
    expect(table.locator('tr[data-skill="shout"]')).to_be_visible()
    page.get_by_label("Text").fill("nothing like this")
    expect(rows).to_have_count(0)
    expect(page.get_by_text("No skill matches these filters.")).to_be_visible()
    page.get_by_label("Text").fill("")

    # A skill's page: its parameters, its versions (newest first), its graph.
    table.get_by_role("link", name="greet").click()
    expect(page).to_have_url(f"{server.url}/#/skills/greet")
    expect(page.get_by_test_id("skill-version")).to_have_text("v2 (newest)")
    parameters = page.get_by_role("table", name="Parameters")
    expect(parameters.locator('tr[data-parameter="who"] td')).to_have_text(
        ["who", '{"type":"string"}', '"world"', "Whom to greet."]
    )
    expect(parameters.locator('tr[data-parameter="times"] td').nth(2)).to_have_text("1")
    versions = page.get_by_role("table", name="Versions")
    expect(versions.locator("tbody tr")).to_have_count(2)
    expect(versions.locator('tr[data-version="2"] td').nth(3)).to_have_text("a warmer greeting")
    expect(node(page, "say")).to_be_visible()
    page.get_by_role("tab", name="YAML").click()
    expect(page.get_by_label("Skill graph YAML", exact=True)).to_contain_text("Good morning")
    assert violations(page) == []

    # An older version, as it was.
    versions.get_by_role("link", name="v1").click()
    expect(page).to_have_url(f"{server.url}/#/skills/greet?version=1")
    expect(page.get_by_test_id("skill-version")).to_have_text("v1")
    page.get_by_role("tab", name="YAML").click()
    expect(page.get_by_label("Skill graph YAML", exact=True)).to_contain_text("Hello")
    expect(page.get_by_label("Skill graph YAML", exact=True)).not_to_contain_text("Good morning")

    # Export: the version's skill file, as the API gives it.
    with page.expect_download() as download:
        page.get_by_role("button", name="Export v1", exact=True).click()
    exported = download.value
    assert exported.suggested_filename == "greet@1.yaml"
    text = Path(exported.path()).read_text(encoding="utf-8")
    assert text == server.client.get("/api/skills/greet/export", params={"version": 1}).text
    assert "Hello" in text


def test_a_skill_dragged_from_the_palette_is_saved_as_a_skill_node(server: Served, page: Any) -> None:
    _add_skills(server)
    server.import_graph(HOST)
    page.goto(server.url + "/#/graphs/host")
    expect(node(page, "start")).to_be_visible()
    palette = page.get_by_role("navigation", name="Node types")
    item = palette.locator('li[data-skill="greet"]')
    expect(item).to_contain_text("greet v2")

    item.drag_to(page.get_by_test_id("canvas"), target_position={"x": 500, "y": 300})
    expect(node(page, "greet_1")).to_be_visible()
    node(page, "greet_1").click()
    form = page.get_by_test_id("node-form")
    expect(form.get_by_label("Skill (a stored one as name@version, or a skill file)")).to_have_value("greet@2")

    connect(page, "start", "greet_1")
    page.get_by_role("button", name="Validate").click()
    expect(page.get_by_role("status").filter(has_text="valid")).to_have_text("The graph is valid.")
    page.get_by_role("button", name="Save…").click()
    page.get_by_role("button", name="Store version 2").click()
    expect(page.get_by_role("status").filter(has_text="Stored")).to_have_text("Stored version 2.")

    stored = server.client.get("/api/graphs/host").json()
    assert stored["version"] == 2
    nodes = {n["id"]: n for n in stored["graph"]["nodes"]}
    skill_node = _skill_node(nodes)
    assert skill_node["skill"] == "greet@2"
    assert skill_node["inputs"] == {"who": "world", "times": 1}

    # It runs: the skill's node, namespaced under the SKILL node, greets the default.
    run_id = server.start("host", {})
    run = server.wait_status(run_id, "completed")
    outputs = {n["node_id"]: n["effective_output"] for n in run["nodes"]}
    assert outputs["__greet_1__say"] == {"text": "Good morning world"}


def _skill_node(nodes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The SKILL node as stored: itself, or (expanded) the scope its inlined nodes keep."""
    if "greet_1" in nodes:
        return nodes["greet_1"]
    inlined = nodes["__greet_1__say"]["skill_scope"]
    return {"skill": inlined.get("skill"), "inputs": inlined["inputs"]}
