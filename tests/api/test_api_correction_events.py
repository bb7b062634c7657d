"""Corrections over HTTP are events: an SSE client connected before a correction sees it, and
`node:complete` carries the node's output (capped, with a link to the full value)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import ECHO, REVIEWED, Api, read_events, wait_for

from plait.api.events import OUTPUT_CAP_BYTES
from plait.store import Store
from plait.testing import served_app

BIG = "x" * (OUTPUT_CAP_BYTES + 100)
SCRIPT = f"""
responses:
  - {{node: draft, output: {{text: drafted}}}}
  - {{node: polish, output: {{text: {BIG}}}}}
"""


def plain(value: dict[str, Any]) -> dict[str, Any]:
    """A value without the schema marks (`_schema_id`, `_schema_version`) stored outputs carry."""
    return {k: v for k, v in value.items() if not k.startswith("_schema")}


class Listener:
    """An SSE client reading a run's stream in a thread, from before anything is corrected."""

    def __init__(self, client: httpx.Client, run_id: str) -> None:
        self.events: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._read, args=(client, run_id), daemon=True)
        self._thread.start()

    def _read(self, client: httpx.Client, run_id: str) -> None:
        def keep(event: dict[str, Any]) -> bool:
            self.events.append(event)
            return False

        # the server may stop first (a failed test): then the assertions say what was missed
        with client, contextlib.suppress(httpx.HTTPError):
            read_events(client, run_id, until=keep)

    def saw(self, kind: str, node_id: str | None = None) -> dict[str, Any]:
        return dict(
            wait_for(
                lambda: next((e for e in self.events if e["event"] == kind and e["node_id"] == node_id), None),
                what=f"{kind} {node_id} on the stream",
            )
        )

    def kinds_after(self, kind: str) -> list[tuple[str, str | None]]:
        kinds = [(e["event"], e["node_id"]) for e in self.events]
        first = next(i for i, (k, _) in enumerate(kinds) if k == kind)
        return kinds[first + 1 :]

    def join(self) -> None:
        self._thread.join(timeout=20)
        assert not self._thread.is_alive(), "the stream did not end"


@pytest.fixture
def api(store: Store, tmp_path: Path) -> Iterator[Api]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with served_app(store=store, llm=f"scripted:{script}") as served, served.client() as client:
        for text in (ECHO, REVIEWED):
            assert client.post("/api/graphs", json={"source": text}).status_code == 201
        yield Api(client=client, url=served.url, store=store, script=script)


def test_a_client_connected_before_corrections_sees_each_of_them(api: Api) -> None:
    run_id = api.start("reviewed")
    api.wait_status(run_id, "paused")
    listener = Listener(httpx.Client(base_url=api.url, timeout=30), run_id)
    listener.saw("run:paused", "check")  # connected: the backlog has arrived

    override = {"value": {"text": "by hand"}, "policy": "KEEP", "note": "tone"}
    assert api.client.post(f"/api/runs/{run_id}/nodes/draft/override", json=override).status_code == 200
    overridden = listener.saw("node:overridden", "draft")["data"]
    assert overridden["output"] == {"text": "by hand"}
    assert (overridden["policy"], overridden["note"], overridden["by"]) == ("KEEP", "tone", "api")
    assert plain(api.client.get(overridden["output_url"]).json()["effective_output"]) == {"text": "by hand"}

    rollback = {"target": "draft", "to_version": 1}
    assert api.client.post(f"/api/runs/{run_id}/rollback", json=rollback).status_code == 200
    rolled = listener.saw("run:rolled_back", "draft")["data"]
    assert (rolled["target"], rolled["to_version"], rolled["by"]) == ("draft", 1, "api")

    review = {"value": {"text": "checked"}}
    assert api.client.post(f"/api/runs/{run_id}/nodes/check/review", json=review).status_code == 200
    reviewed = listener.saw("node:reviewed", "check")["data"]
    assert (reviewed["approved"], reviewed["output"]) == (False, {"text": "checked"})
    assert listener.saw("run:resumed")["data"]["reason"] == "review"
    listener.saw("workflow:complete")
    listener.join()
    assert listener.kinds_after("run:paused") == [
        ("node:overridden", "draft"),
        ("run:rolled_back", "draft"),
        ("node:reviewed", "check"),
        ("run:resumed", None),
        ("execution.started", None),
        ("node:start", "polish"),
        ("node:complete", "polish"),
        ("workflow:complete", None),
    ]


def test_a_rerun_is_announced_with_what_it_queued_and_marked_stale(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    _, before = read_events(api.client, run_id)
    assert api.client.post(f"/api/runs/{run_id}/nodes/draft/rerun", json={"downstream": False}).status_code == 200
    _, after = read_events(api.client, run_id, last_id=before[-1]["id"])
    kinds = [(e["event"], e["node_id"]) for e in after]
    assert kinds[:3] == [("node:rerun", "draft"), ("node:stale", "polish"), ("node:queued", "draft")]
    assert after[0]["data"]["downstream"] is False
    assert ("node:complete", "draft") in kinds


def test_node_complete_carries_its_output_up_to_the_cap(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    _, events = read_events(api.client, run_id)
    complete = {e["node_id"]: e["data"] for e in events if e["event"] == "node:complete"}
    small, big = complete["draft"], complete["polish"]
    assert plain(small["output"]) == {"text": "drafted"}
    assert "output_truncated" not in small
    assert big["output"] is None
    assert big["output_truncated"] is True
    assert big["output_bytes"] > OUTPUT_CAP_BYTES
    assert big["output_url"] == f"/api/node-runs/{big['node_run_id']}"
    full = api.client.get(big["output_url"])
    assert full.status_code == 200
    assert plain(full.json()["effective_output"]) == {"text": BIG}
