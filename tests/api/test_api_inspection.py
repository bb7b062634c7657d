"""What the CLI does without changing a run, over HTTP: validate, dry run, replay, the ledger."""

from __future__ import annotations

from api_helpers import ECHO, Api


def test_validate_reports_every_problem_and_stores_nothing(api: Api) -> None:
    ok = api.client.post("/api/graphs/validate", json={"source": ECHO.replace("id: echo", "id: fresh")})
    assert ok.status_code == 200
    assert (ok.json()["valid"], ok.json()["errors"]) == (True, [])
    broken = ECHO.replace("target: END", "target: nowhere")
    bad = api.client.post("/api/graphs/validate", json={"source": broken}).json()
    assert bad["valid"] is False
    assert any("nowhere" in e["message"] for e in bad["errors"])
    assert all(e["line"] for e in bad["errors"])  # text keeps its line numbers
    assert "fresh" not in [g["slug"] for g in api.client.get("/api/graphs").json()["items"]]


def test_dry_run_renders_every_prompt_and_calls_no_model(api: Api) -> None:
    dry = api.client.post("/api/graphs/echo/dry-run", json={"input": {"text": "tea"}})
    assert dry.status_code == 200, dry.text
    nodes = {n["node_id"]: n for n in dry.json()["nodes"]}
    assert nodes["draft"]["messages"][-1]["content"] == "Draft tea"
    assert nodes["polish"]["messages"][-1]["content"].startswith("Polish ")  # from draft's placeholder
    assert api.client.get("/api/runs").json()["items"] == []  # no run stored
    assert api.client.post("/api/graphs/echo/dry-run", json={"input": {}}).status_code == 422
    assert api.client.post("/api/graphs/nope/dry-run", json={"input": {}}).status_code == 404


def test_dry_run_reports_what_the_runs_pre_check_would_fail(api: Api) -> None:
    body = {"input": {"text": "tea"}, "upstream": {"draft": {"text": ""}}}
    dry = api.client.post("/api/graphs/echo/dry-run", json=body)
    assert dry.status_code == 200, dry.text
    (problem,) = dry.json()["problems"]
    assert problem.startswith("node 'polish': pre-check failed: user_prompt_tpl prints 'draft.text', which is empty")
    polish = next(n for n in dry.json()["nodes"] if n["node_id"] == "polish")
    assert polish["problems"] == [problem.removeprefix("node 'polish': ")]


def test_replay_resends_a_recorded_call_and_diffs_the_answers(api: Api) -> None:
    run_id = api.start("echo", {"text": "tea"})
    api.wait_status(run_id, "completed")
    draft = next(n for n in api.run(run_id)["nodes"] if n["node_id"] == "draft")
    replayed = api.client.post(f"/api/node-runs/{draft['id']}/replay", json={})
    assert replayed.status_code == 200, replayed.text
    body = replayed.json()
    assert (body["node_run_id"], body["stored"], body["new"]) == (draft["id"], {"text": "drafted"}, {"text": "drafted"})
    assert body["violations"] == []
    assert api.client.post("/api/node-runs/nope/replay", json={}).status_code == 404


def test_the_ledger_lists_every_version_and_who_read_it(api: Api) -> None:
    run_id = api.start("echo", {"text": "tea"})
    api.wait_status(run_id, "completed")
    entries = api.client.get(f"/api/runs/{run_id}/ledger").json()
    assert sorted((e["owner"], e["version"], e["kind"]) for e in entries) == [
        ("draft", 1, "execute"),
        ("input", 1, "input"),
        ("polish", 1, "execute"),
    ]
    draft = next(e for e in entries if e["owner"] == "draft")
    assert [r["node_id"] for r in draft["consumed_by"]] == ["polish"]
    assert api.client.get("/api/runs/nope/ledger").status_code == 404
