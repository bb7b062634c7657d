"""The run page of a run whose graph's schema changed since, in the browser: the run still opens,
its output as stored, under a banner naming the schema, both versions and the migration to add."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from playwright.sync_api import expect

from tests.web.conftest import Served, serve

TITLE = "A headline long enough to break a limit of fifty ch"


def headline(max_length: int) -> str:
    return yaml.safe_dump(
        {
            "plait": 1,
            "id": "headline",
            "schemas": [
                {
                    "id": "headline",
                    "schema": {
                        "type": "object",
                        "properties": {"title": {"type": "string", "maxLength": max_length}},
                        "required": ["title"],
                    },
                }
            ],
            "nodes": [{"id": "write", "type": "LLM_CALL", "user_prompt_tpl": "A headline about {{ input.topic }}"}],
            "edges": [{"source": "write", "target": "END", "schema_id": "headline"}],
        },
        sort_keys=False,
    )


@pytest.fixture
def headline_server(tmp_path: Path) -> Iterator[Served]:
    script = tmp_path / "headline_script.yaml"
    script.write_text(yaml.safe_dump({"responses": [{"node": "write", "output": {"title": TITLE}}]}))
    yield from serve(tmp_path, script=script)


def test_a_run_older_than_its_schema_opens_with_a_banner_saying_what_to_add(headline_server: Served, page: Any) -> None:
    server = headline_server
    assert server.client.post("/api/graphs", json={"source": headline(60)}).status_code == 201
    run_id = server.start("headline", {"topic": "x"})
    server.wait_status(run_id, "completed")
    tightened = server.client.put("/api/graphs/headline", json={"source": headline(50)})
    assert tightened.status_code == 200, tightened.text

    page.goto(f"{server.url}/#/runs/{run_id}")
    banner = page.get_by_test_id("outdated-banner")
    expect(banner).to_contain_text("One output predates the graph's current schema and is shown as stored.")
    expect(banner).to_contain_text("write: stored with schema headline 1.0.0; the graph now has 2.0.0.")
    snippet = banner.locator("pre")
    expect(snippet).to_contain_text("schema_id: headline")
    expect(snippet).to_contain_text("from_version: 1.x.x")
    expect(snippet).to_contain_text("to_version: 2.0.0")
    graph_page = f"#/graphs/{server.run(run_id)['graph_id']}"
    expect(banner.get_by_role("link", name="graph's YAML tab")).to_have_attribute("href", graph_page)
    expect(page.get_by_role("alert")).to_have_count(0)  # no error in place of the run
    expect(page.get_by_test_id("run-status")).to_have_text("completed")
