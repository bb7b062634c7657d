"""Running evaluations through the HTTP API, on a real server (SQLite and PostgreSQL): started
(202) and driven in the background, followed as Server-Sent Events (a `case` event per case in the
set's order, numbered by position, then the `verdict`), resumed after `Last-Event-ID`, read back
with each case's results; its runs left out of `GET /api/runs`; refusals with the right statuses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from api_helpers import sse_messages, wait_for

from plait.store import Store
from plait.testing import served_app
from tests.runs.eval_run_scenario import RULES, graph, judged, new_version


@pytest.fixture
def client(store: Store, tmp_path: Path) -> Iterator[httpx.Client]:
    judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"responses": RULES}))
    with served_app(store=store, llm=f"scripted:{answers}") as served, served.client() as api:
        yield api


def events(client: httpx.Client, evaluation_id: str, last_id: int | None = None) -> tuple[int, list[dict[str, Any]]]:
    headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
    said: list[dict[str, Any]] = []
    with client.stream("GET", f"/api/evaluations/{evaluation_id}/events", headers=headers, timeout=60) as response:
        if response.status_code != 200:
            response.read()
            return response.status_code, said
        for fields in sse_messages(response):
            event = json.loads(fields["data"])
            assert (str(event["id"]), event["event"]) == (fields["id"], fields["event"])
            said.append(event)
    return 200, said


def test_an_evaluation_is_started_followed_and_read_back(client: httpx.Client) -> None:
    started = client.post("/api/graphs/feedback/evaluations", json={"set": "fixes", "min_cases": 1})
    assert started.status_code == 202, started.text
    body = started.json()
    evaluation_id = body["id"]
    assert body["events"] == f"/api/evaluations/{evaluation_id}/events"
    status, said = events(client, evaluation_id)
    assert status == 200
    assert [(e["id"], e["event"]) for e in said] == [(1, "case"), (2, "case"), (3, "case"), (4, "verdict")]
    assert [e["data"]["outcome"] for e in said[:3]] == ["fixed", "fixed", "still_right"]
    assert said[3]["data"]["status"] == "pass"
    assert said[3]["data"]["exit_code"] == 0
    assert said[0]["evaluation_id"] == evaluation_id

    shown = client.get(f"/api/evaluations/{evaluation_id}").json()
    assert (shown["status"], shown["candidate_version"], shown["baseline_version"]) == ("completed", 2, None)
    assert shown["set"]["name"] == "fixes"
    assert shown["verdict"]["lines"][0] == "verdict: pass (exit 0)"
    assert [c["outcome"] for c in shown["cases"]] == ["fixed", "fixed", "still_right"]
    assert shown["cases"][0]["candidate"][0]["output"] == {"label": "bug"}

    listed = client.get("/api/graphs/feedback/evaluations").json()
    assert [(e["id"], e["set"]["name"], e["candidate_version"], e["status"], e["verdict"]) for e in listed] == [
        (evaluation_id, "fixes", 2, "completed", "pass")
    ]
    assert client.get("/api/graphs/nothing/evaluations").status_code == 404

    status, after = events(client, evaluation_id, last_id=2)  # a client reconnecting gets what came after
    assert (status, [(e["id"], e["event"]) for e in after]) == (200, [(3, "case"), (4, "verdict")])
    assert events(client, evaluation_id, last_id=4)[0] == 204
    refused = client.get(f"/api/evaluations/{evaluation_id}/events", headers={"Last-Event-ID": "null"})
    assert refused.status_code == 422  # not an event id: said, not read as 0

    listed = client.get("/api/runs").json()["items"]
    every = client.get("/api/runs", params={"evaluations": True}).json()["items"]
    assert (len(listed), len(every)) == (3, 6)


def test_an_evaluation_read_while_it_runs_shows_what_is_scored(client: httpx.Client) -> None:
    started = client.post(
        "/api/graphs/feedback/evaluations", json={"set": "fixes", "min_cases": 1, "baseline_version": 1, "repeat": 2}
    ).json()

    def ended() -> dict[str, Any] | None:
        found = client.get(f"/api/evaluations/{started['id']}").json()
        return found if found["status"] in ("completed", "failed") else None

    shown = wait_for(ended, timeout=90, what="the evaluation to end")
    assert shown["status"] == "completed", shown["error"]
    assert (shown["baseline_version"], shown["repetitions"]) == (1, 2)
    assert all(c["baseline"]["run_id"] for c in shown["cases"])
    assert [len(c["candidate"]) for c in shown["cases"]] == [2, 2, 2]


def test_refusals_say_what_is_wrong(client: httpx.Client) -> None:
    unknown = client.post("/api/graphs/feedback/evaluations", json={"set": "nope"})
    assert unknown.status_code == 404
    assert "no evaluation set 'nope'" in unknown.json()["error"]["message"]
    version = client.post("/api/graphs/feedback/evaluations", json={"set": "fixes", "version": 9})
    assert version.status_code == 404
    assert client.post("/api/graphs/feedback/evaluations", json={"set": "fixes", "repeat": 0}).status_code == 422
    none_at_once = client.post("/api/graphs/feedback/evaluations", json={"set": "fixes", "concurrency": 0})
    assert none_at_once.status_code == 422
    assert client.post("/api/graphs/nothing/evaluations", json={"set": "fixes"}).status_code == 404
    assert client.get("/api/evaluations/nope").status_code == 404
    assert client.get("/api/evaluations/nope/events").status_code == 404
