"""POST /api/graphs/{ref}/promote over a real server, SQLite and PostgreSQL: 422 for a request
that cannot be made, 404 for an unknown graph, version or set, 409 when the gate refuses (the
verdict in `details`), 200 with the promotion; GET /api/graphs/{ref} shows the promoted version
and every promotion; POST /api/runs and the original API's run route then run the promoted
version, unless `version` names another. Every refusal is in the HTTP API's words."""

from __future__ import annotations

from typing import Any

from api_helpers import Api

from plait.api.wording import CLI_TEXT
from tests.runs.promote_scenario import eval_set, evaluated, three_versions


def promote(api: Api, status: int, ref: str = "labels", **body: Any) -> dict[str, Any]:
    response = api.client.post(f"/api/graphs/{ref}/promote", json=body)
    assert response.status_code == status, response.text
    answer: dict[str, Any] = response.json()
    if status >= 400:
        error = answer["error"]
        assert not CLI_TEXT.search(f"{error['message']} {error['hint']}"), error  # said with routes and fields
        return dict(error)
    return answer


def ran(api: Api, **body: Any) -> tuple[int, Any]:
    response = api.client.post("/api/runs", json={"graph": "labels", "input": {}, **body})
    assert response.status_code == 202, response.text
    run = api.wait_status(response.json()["run_id"], "completed")
    return run["graph_version"], run["output"]


def test_the_gate_moves_the_promoted_version_and_runs_follow_it(api: Api) -> None:
    graph_id = three_versions(api.store)
    fixes = eval_set(api.store, graph_id)
    detail = api.client.get("/api/graphs/labels").json()
    assert (detail["version"], detail["promoted_version"], detail["promotions"]) == (3, None, [])
    assert ran(api) == (3, {"label": "three"})

    failed = evaluated(api.store, fixes, 2, "fail")
    refused = promote(api, 409, version=2, gate="fixes")
    assert refused["code"] == "gate_refused"
    assert f"its newest evaluation ({failed.id}) says fail, not pass" in refused["message"]
    assert refused["details"] == ["verdict: fail", "  fail         regressions 2 > 0 allowed"]
    assert 'POST /api/graphs/labels/evaluations with {"set": "fixes@1", "version": 2}' in refused["hint"]
    assert "send `force: true` with a `note` to promote anyway" in refused["hint"]

    passed = evaluated(api.store, fixes, 2, "pass")
    made = promote(api, 200, version=2, gate="fixes")
    assert made == {
        "version": 2, "previous_version": None, "evaluation_id": passed.id, "gate": "fixes@1", "verdict": "pass",
        "forced": False, "note": None, "promoted_by": "api", "promoted_at": made["promoted_at"],
    }  # fmt: skip
    assert ran(api) == (2, {"label": "two"})
    assert ran(api, version=3) == (3, {"label": "three"})  # an explicit version still wins
    missing = api.client.post("/api/runs", json={"graph": "labels", "input": {}, "version": 9})
    assert missing.status_code == 404
    assert "has no version 9: its versions are 1 to 3" in missing.json()["error"]["message"]
    original = api.client.post("/PromptGraphRunStartRoute", json={"prompt_graph_def_id": "labels"}).json()
    assert original["graph_def_ver"] == 2

    forced = promote(api, 200, version=1, gate="fixes", force=True, note="roll back: two mislabels invoices")
    assert (forced["forced"], forced["previous_version"], forced["evaluation_id"]) == (True, 2, None)
    detail = api.client.get("/api/graphs/labels").json()
    assert detail["promoted_version"] == 1
    history = [(p["version"], p["forced"], p["gate"]) for p in detail["promotions"]]
    assert history == [(1, True, None), (2, False, "fixes@1")]
    assert detail["promotions"][0]["note"] == "roll back: two mislabels invoices"
    assert api.client.get("/api/graphs/labels", params={"version": 2}).json()["promoted_version"] == 1
    assert ran(api) == (1, {"label": "one"})


def test_requests_that_cannot_be_made_are_refused_with_their_status(api: Api) -> None:
    graph_id = three_versions(api.store)
    eval_set(api.store, graph_id)
    no_gate = promote(api, 422, version=2)
    assert no_gate["code"] == "promotion_invalid"
    assert "send `gate`: NAME" in no_gate["hint"]
    no_note = promote(api, 422, version=2, gate="fixes", force=True)
    assert no_note["message"] == "a forced promotion needs a note saying why"
    assert no_note["hint"] == "send a `note` with `force: true`"
    assert promote(api, 422, version=0, gate="fixes")["code"] == "invalid_request"
    assert promote(api, 422, version=2, gate="fixes", by="me")["code"] == "invalid_request"
    assert "no graph 'nowhere'" in promote(api, 404, ref="nowhere", version=1, gate="fixes")["message"]
    assert "has no version 7" in promote(api, 404, version=7, gate="fixes")["message"]
    assert "has no evaluation set 'typo'" in promote(api, 404, version=2, gate="typo")["message"]
    system = promote(api, 403, ref="plait.kb_search", version=1, force=True, note="older is better")
    assert system["hint"] == "fork it (POST /api/graphs/plait.kb_search/fork) and promote versions of the fork"
    unevaluated = promote(api, 409, version=2, gate="fixes")
    assert "no evaluation of it has completed" in unevaluated["message"]
    assert api.client.get("/api/graphs/labels").json()["promotions"] == []
