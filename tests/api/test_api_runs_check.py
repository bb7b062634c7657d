"""`GET /api/runs/{id}/check` on a real server (SQLite and PostgreSQL): a run is consistent after
its corrections, an inconsistency written past them is reported in HTTP words, an unknown run is a
404 in the API's error shape."""

from __future__ import annotations

import re
from typing import Any, get_args

from api_helpers import Api, wait_for

from plait.api.schemas import CheckProblemKind
from plait.runs.check import ProblemKind
from plait.store import current_activations
from plait.store.corrections import CorrectionWriter
from plait.store.writes import Version

CLI = re.compile(r"\bplait [a-z]+|(?<![\w-])--[a-z]|(?<!\w)-i ")


def check(api: Api, run_id: str) -> dict[str, Any]:
    response = api.client.get(f"/api/runs/{run_id}/check")
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_a_completed_run_and_a_paused_one_are_consistent(api: Api) -> None:
    done = api.start("echo")
    api.wait_status(done, "completed")
    assert check(api, done) == {"run_id": done, "consistent": True, "checked": 2, "problems": []}
    paused = api.start("reviewed")
    api.wait_status(paused, "paused")
    report = check(api, paused)  # the review waits for a person: nothing is out of step
    assert (report["consistent"], report["checked"]) == (True, 2)


def test_a_ledger_version_whose_readers_were_not_marked_is_reported(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    store = api.store
    draft = current_activations(store.runs.node_runs(run_id))["draft"]
    version = store.ledger.heads(run_id)["draft"].version + 1
    assert store.runs.acquire_lease(run_id, "test", 30)
    try:  # a new version of draft, written past the corrections: polish, which read version 1, is not stale
        CorrectionWriter(store.db).apply(
            run_id, "test", [Version(run_id, "draft", version, "override", "test", {}, draft.id, {"text": "new"})]
        )
    finally:
        store.runs.release_lease(run_id, "test")

    report = check(api, run_id)
    assert report["consistent"] is False
    assert {(p["kind"], p["node_id"]) for p in report["problems"]} == {
        ("stale_read_not_marked", "polish"),
        ("ledger_mismatch", "draft"),
    }
    polish = next(p for p in report["problems"] if p["node_id"] == "polish")
    assert (polish["run_id"], polish["node_run_id"]) == (run_id, api.newest(run_id)["polish"]["id"])
    assert "polish read draft at version 1" in polish["message"]
    assert "POST /api/runs/{id}/nodes/{node}/rerun" in polish["hint"]  # in HTTP words, not the CLI's
    for problem in report["problems"]:
        assert not CLI.search(problem["message"] + problem["hint"]), problem


def test_an_override_that_invalidates_leaves_the_run_consistent(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    response = api.client.post(
        f"/api/runs/{run_id}/nodes/draft/override", json={"value": {"text": "mine"}, "policy": "INVALIDATE"}
    )
    assert response.status_code == 200, response.text
    assert api.run(run_id)["stale"] == ["polish"]
    assert check(api, run_id)["consistent"] is True


def test_a_run_being_executed_has_not_settled(api: Api) -> None:
    run_id = api.start("slow")  # its second node's first model call hangs
    wait_for(lambda: api.newest(run_id).get("crawl", {}).get("status") == "running", what="crawl to start")
    report = check(api, run_id)
    assert (report["consistent"], report["checked"]) == (False, 0)  # moving values are not judged
    (problem,) = report["problems"]
    assert (problem["kind"], problem["run_id"], problem["node_id"]) == ("not_settled", run_id, None)
    assert "is being executed" in problem["message"]
    assert api.client.post(f"/api/runs/{run_id}/cancel").status_code == 200
    assert check(api, run_id)["consistent"] is True  # cancelled: settled, and what completed is consistent


def test_an_unknown_run_is_a_404(api: Api) -> None:
    response = api.client.get("/api/runs/no-such-run/check")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "not_found"
    assert "no-such-run" in error["message"]


def test_the_documented_kinds_are_the_checks_kinds() -> None:
    assert set(get_args(CheckProblemKind)) == {str(kind) for kind in ProblemKind}
