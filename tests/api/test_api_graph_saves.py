"""Saving a graph from an editor over a real server: the preview of a save (its schema-change
classification, nothing stored), and a save that says which version it was based on and is
refused (409 `version_conflict`) when someone saved in between, instead of overwriting it."""

from __future__ import annotations

from typing import Any

import yaml
from api_helpers import ECHO, Api


def _echo(**text_schema: Any) -> dict[str, Any]:
    graph = yaml.safe_load(ECHO)
    graph["schemas"][0]["schema"]["properties"]["text"].update(text_schema)
    return dict(graph)


def test_a_preview_classifies_the_change_and_stores_nothing(api: Api) -> None:
    breaking = _echo(maxLength=10)  # a value valid before may be refused now: major
    preview = api.client.post("/api/graphs/echo/preview", json={"graph": breaking})
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert (body["latest_version"], body["version"], body["unchanged"], body["level"]) == (1, 2, False, "major")
    [change] = body["schema_changes"]
    assert (change["schema_id"], change["level"], change["from_version"], change["to_version"]) == (
        "text",
        "major",
        "1.0.0",
        "2.0.0",
    )
    assert change["findings"]
    assert api.client.get("/api/graphs/echo").json()["version"] == 1  # nothing was stored

    same = api.client.post("/api/graphs/echo/preview", json={"graph": yaml.safe_load(ECHO)}).json()
    assert (same["unchanged"], same["version"], same["schema_changes"]) == (True, 1, [])
    saved = api.client.put("/api/graphs/echo", json={"graph": breaking}).json()
    assert (saved["version"], saved["schema_changes"][0]["level"]) == (2, "major")


def test_a_preview_refuses_what_the_save_would(api: Api) -> None:
    invalid = api.client.post("/api/graphs/echo/preview", json={"source": "plait: 1\nid: echo\nnodes: 3\n"})
    assert invalid.status_code == 422
    assert invalid.json()["error"]["code"] == "graph_invalid"
    assert api.client.post("/api/graphs/nope/preview", json={"graph": {"nodes": []}}).status_code == 404
    system = api.client.get("/api/graphs/plait.video_chapters").json()["graph"]
    read_only = api.client.post("/api/graphs/plait.video_chapters/preview", json={"graph": system})
    assert read_only.status_code == 403
    assert read_only.json()["error"]["code"] == "read_only"


def test_a_save_over_a_newer_version_is_refused(api: Api) -> None:
    mine, theirs = _echo(maxLength=10), _echo(minLength=1)
    first = api.client.put("/api/graphs/echo", json={"graph": theirs, "base_version": 1})
    assert first.status_code == 200, first.text
    assert first.json()["version"] == 2

    stale = api.client.put("/api/graphs/echo", json={"graph": mine, "base_version": 1})
    assert stale.status_code == 409
    error = stale.json()["error"]
    assert error["code"] == "version_conflict"
    assert "is at version 2, but this edit started from version 1" in error["message"]
    assert error["details"] == ["base_version: 1", "latest_version: 2"]
    assert api.client.get("/api/graphs/echo").json()["version"] == 2  # theirs is kept

    rebased = api.client.put("/api/graphs/echo", json={"graph": mine, "base_version": 2})
    assert rebased.status_code == 200
    assert rebased.json()["version"] == 3
    assert api.client.put("/api/graphs/echo", json={"graph": mine}).json()["created"] is False  # no base: as before
