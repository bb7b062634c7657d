"""The override editor checks a value against the node's out-edge schemas in the browser, and
lists the same problems, in the same words, as the server refuses the value with."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.conftest import EXAMPLES, Served

CHAPTER = {"title": "Intro", "start_sec": 0, "end_sec": 12}
WRONG_VALUES = [
    {"chapters": "none"},  # type
    {},  # required
    {"chapters": [{"title": "Intro"}]},  # nested required, twice
    {"chapters": [{**CHAPTER, "title": "x" * 61}]},  # maxLength
    {"chapters": [{**CHAPTER, "start_sec": -1, "end_sec": "12"}]},  # minimum and type
    {"chapters": [CHAPTER] * 9},  # maxItems
    {"chapters": [{**CHAPTER, "summary": 5, "title": None}]},  # type of null and of a number
]


def _browser(line: str) -> tuple[str, str]:
    schema, _, rest = line.partition(": ")
    return schema, rest


def _server(line: str) -> tuple[str, str]:
    found = re.fullmatch(r"(.*) \(schema '([^']+)'\)", line)
    assert found, line
    return found.group(2), found.group(1)


@pytest.fixture
def paused_run(server: Served) -> str:
    server.import_graph(EXAMPLES / "video_chapters.yaml")
    run_id = server.start("video_chapters", {"transcript": "We build a birdhouse."})
    server.wait_status(run_id, "paused")
    return run_id


def test_the_browser_lists_what_the_server_refuses(server: Served, page: Any, paused_run: str) -> None:
    page.goto(f"{server.url}/#/runs/{paused_run}")
    page.locator('.box[data-node="chapter_split"]').click()
    page.get_by_test_id("node-panel").get_by_role("button", name="Override…").click()
    editor = page.get_by_label("Corrected value (JSON)", exact=True)
    for value in WRONG_VALUES:
        editor.click()
        page.keyboard.press("Control+A")
        page.keyboard.press("Delete")
        editor.fill(json.dumps(value))
        listed = page.get_by_label("Schema errors").locator("li")
        expect(listed.first).to_be_visible()
        in_browser = sorted(_browser(line) for line in listed.all_inner_texts())
        answer = server.client.post(
            f"/api/runs/{paused_run}/nodes/chapter_split/override", json={"value": value, "policy": "KEEP"}
        )
        assert answer.status_code == 422, answer.text
        on_server = sorted(_server(line) for line in answer.json()["error"]["details"])
        assert in_browser == on_server, json.dumps(value)
