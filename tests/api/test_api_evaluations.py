"""Evaluation sets through the HTTP API, on a real server (SQLite and PostgreSQL): a set built from
a judged graph (201) with its cases, built again as the next revision while the first stays as it
was, listed, shown by revision, filtered; and refusals with the right statuses, in HTTP words."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from plait.store import Store
from plait.testing import served_app
from tests.runs.eval_scenario import Judged, judged_graph, label


@pytest.fixture
def judged(store: Store, tmp_path: Path) -> Judged:
    return judged_graph(store, tmp_path)


@pytest.fixture
def client(store: Store, judged: Judged) -> Iterator[httpx.Client]:
    with served_app(store=store) as served, served.client() as api:
        yield api


def test_a_set_is_built_listed_and_shown_by_revision(client: httpx.Client, judged: Judged) -> None:
    made = client.post("/api/graphs/triage/eval-sets", json={"name": "triage"})
    assert made.status_code == 201, made.text
    first = made.json()
    assert (first["ref"], first["revision"], first["cases"], first["created_by"]) == ("triage@1", 1, 6, "api")
    assert first["built_from"]["labels"] == {"corrected": 4, "approved": 2}
    assert first["built_from"]["skipped"]["count"] == 1
    shown = client.get("/api/graphs/triage/eval-sets/triage").json()
    assert shown["set"] == first
    cases = shown["cases"]
    assert [(c["node_id"], c["label"]) for c in cases] == [
        ("classify", "approved"), ("classify", "corrected"), ("classify", "corrected"), ("classify", "corrected"),
        ("classify", "approved"), ("finish", "corrected"),
    ]  # fmt: skip
    assert cases[1]["source_run_id"] == judged.runs["r2"]
    assert (cases[1]["original"], cases[1]["expected"]) == (label("question"), label("bug"))
    assert cases[1]["diff"] == 'label: "question" → "bug"'
    assert cases[1]["input"] == {"input": {"text": "how do I export?"}, "upstream": {}, "read": {"input": 1}}
    assert cases[1]["schemas"] == [{"id": "label", "version": "1.0.0"}]
    assert (cases[1]["judged_by"], cases[1]["note"], cases[1]["ledger_version"]) == ("ann", "corrected in review", 1)
    again = client.post(
        "/api/graphs/triage/eval-sets",
        json={"name": "triage", "sources": ["corrections"], "nodes": ["finish"], "since": "1d", "level": "node"},
    )
    assert again.status_code == 201, again.text
    assert (again.json()["ref"], again.json()["cases"]) == ("triage@2", 1)
    assert again.json()["built_from"]["since"] > first["created_at"] - 86400 - 60
    listed = client.get("/api/graphs/triage/eval-sets").json()
    assert [s["ref"] for s in listed] == ["triage@2", "triage@1"]
    assert client.get("/api/graphs/triage/eval-sets/triage").json()["set"]["revision"] == 2
    old = client.get("/api/graphs/triage/eval-sets/triage", params={"revision": 1}).json()
    assert old == shown  # the first revision is unchanged
    runs = client.post("/api/graphs/triage/eval-sets", json={"name": "runs", "level": "run"})
    assert runs.status_code == 201, runs.text
    [run_case] = client.get("/api/graphs/triage/eval-sets/runs").json()["cases"]
    assert (run_case["level"], run_case["node_id"], run_case["input"]) == ("run", None, {"text": "it crashes"})


def test_refusals_have_their_statuses_and_say_what_to_do_over_http(client: httpx.Client) -> None:
    unknown = client.post("/api/graphs/nowhere/eval-sets", json={"name": "x"})
    assert unknown.status_code == 404
    assert client.get("/api/graphs/nowhere/eval-sets").status_code == 404
    assert client.get("/api/graphs/triage/eval-sets/missing").status_code == 404
    assert client.get("/api/graphs/triage/eval-sets/missing", params={"revision": 0}).status_code == 422
    nothing = client.post("/api/graphs/triage/eval-sets", json={"name": "x", "since": "2999-01-01"})
    assert nothing.status_code == 422
    error = nothing.json()["error"]
    assert error["code"] == "eval_build"
    assert "has no corrections or approvals since" in error["message"]
    assert "POST /api/runs/{id}/nodes/{node}/review" in error["hint"]
    assert "plait " not in error["hint"]
    for body, words in (
        ({"name": "Bad Name"}, "not an evaluation set name"),
        ({"name": "x", "nodes": ["nope"]}, "has no node 'nope'"),
        ({"name": "x", "since": "soon"}, "neither a date nor a duration"),
        ({"name": "x", "sources": ["guesses"]}, ""),
        ({"name": "x", "sources": []}, ""),
        ({"name": "x", "level": "graph"}, ""),
        ({"name": "x", "extra": 1}, ""),
    ):
        refused = client.post("/api/graphs/triage/eval-sets", json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert words in refused.json()["error"]["message"], body
    assert client.get("/api/graphs/triage/eval-sets").json() == []
