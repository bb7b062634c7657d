"""/api/runs over a real server: start, get, list, pause, resume, cancel, diff, node runs;
and their refusals (404, 409, 422)."""

from __future__ import annotations

from api_helpers import Api, wait_for


def test_start_executes_in_the_background_and_get_shows_every_node(api: Api) -> None:
    started = api.client.post("/api/runs", json={"graph": "echo", "input": {"text": "hi"}})
    assert started.status_code == 202
    body = started.json()
    assert body["events"] == f"/api/runs/{body['run_id']}/events"
    run = api.wait_status(body["run_id"], "completed")
    assert run["output"] == {"text": "polished"}
    assert run["input"] == {"text": "hi"}
    nodes = {n["node_id"]: n for n in run["nodes"]}
    assert nodes["draft"]["effective_output"]["text"] == "drafted"
    assert all(n["status"] == "completed" and n["current"] for n in nodes.values())
    detail = api.client.get(f"/api/node-runs/{nodes['polish']['id']}").json()
    assert "Polish drafted" in str(detail["input_snapshot"])
    assert detail["run_id"] == body["run_id"]
    raw = api.client.get(f"/api/runs/{body['run_id']}", params={"raw": "true"}).json()
    assert raw["nodes"][0]["effective_output"]["text"] == "drafted"


def test_start_refusals(api: Api) -> None:
    unknown = api.client.post("/api/runs", json={"graph": "nope", "input": {}})
    assert unknown.status_code == 404
    assert "stored graph" in unknown.json()["error"]["message"]
    bad_input = api.client.post("/api/runs", json={"graph": "echo", "input": {"text": 3}})
    assert bad_input.status_code == 422
    assert bad_input.json()["error"]["details"]
    a_file = api.client.post("/api/runs", json={"graph": "/etc/passwd.yaml", "input": {}})
    assert a_file.status_code == 404  # never read from the server's disk
    assert api.client.post("/api/runs", json={"input": {}}).status_code == 422
    assert api.store.runs.list(graph="echo") == []  # nothing was created


def test_a_graph_the_server_cannot_execute_is_refused_before_a_run_exists(api: Api) -> None:
    waits = {
        "plait": 1,
        "id": "mcp_user",
        "schemas": [{"id": "t", "version": "1.0.0", "schema": {"type": "object"}}],
        "nodes": [
            {"id": "ask", "type": "LLM_CALL", "user_prompt_tpl": "hi", "mcp_servers": [{"server_id": "nowhere"}]}
        ],
        "edges": [{"source": "ask", "target": "END", "schema_id": "t"}],
    }
    created = api.client.post("/api/graphs", json={"graph": waits})
    assert created.status_code == 201, created.text
    refused = api.client.post("/api/runs", json={"graph": "mcp_user", "input": {}})
    assert refused.status_code == 422
    assert "cannot execute" in refused.json()["error"]["message"]
    assert api.store.runs.list(graph="mcp_user") == []


def test_list_filters_and_pages(api: Api) -> None:
    ids = [api.start("echo") for _ in range(3)]
    for run_id in ids:
        api.wait_status(run_id, "completed")
    reviewed = api.start("reviewed")
    api.wait_status(reviewed, "paused")
    first = api.client.get("/api/runs", params={"graph": "echo", "limit": 2}).json()
    assert len(first["items"]) == 2
    assert first["next_offset"] == 2
    rest = api.client.get("/api/runs", params={"graph": "echo", "limit": 2, "offset": 2}).json()
    assert rest["next_offset"] is None
    assert {r["id"] for r in first["items"] + rest["items"]} == set(ids)
    paused = api.client.get("/api/runs", params={"status": "paused"}).json()["items"]
    assert [r["id"] for r in paused] == [reviewed]
    assert api.client.get("/api/runs", params={"status": "sleeping"}).status_code == 422
    assert api.client.get("/api/runs", params={"limit": 0}).status_code == 422


def test_unknown_runs_and_node_runs_are_404(api: Api) -> None:
    for path in ("/api/runs/nope", "/api/node-runs/nope", "/api/runs/nope/events"):
        response = api.client.get(path)
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == "not_found"
    for action in ("pause", "resume", "cancel"):
        assert api.client.post(f"/api/runs/nope/{action}").status_code == 404


def crawling(api: Api) -> str:
    """A run of `slow` whose second node is executing (its first model call hangs)."""
    run_id = api.start("slow")
    wait_for(lambda: api.newest(run_id).get("crawl", {}).get("status") == "running", what="crawl to start")
    return run_id


def test_pause_then_resume_finishes_the_run(api: Api) -> None:
    run_id = crawling(api)
    paused = api.client.post(f"/api/runs/{run_id}/pause")
    assert paused.status_code == 200, paused.text
    assert (paused.json()["status"], paused.json()["executing_here"]) == ("paused", False)
    assert api.client.post(f"/api/runs/{run_id}/pause").json()["status"] == "paused"  # twice: no error
    assert api.run(run_id)["status"] == "paused"
    resumed = api.client.post(f"/api/runs/{run_id}/resume")
    assert resumed.status_code == 202
    done = api.wait_status(run_id, "completed")
    assert done["output"] == {"text": "crawled"}
    nodes = api.newest(run_id)
    assert nodes["first"]["activation"] == 1  # a completed node never runs again
    assert nodes["crawl"]["status"] == "completed"


def test_cancel_stops_the_run_for_good(api: Api) -> None:
    run_id = crawling(api)
    assert api.client.post(f"/api/runs/{run_id}/resume").status_code == 409  # executing already
    cancelled = api.client.post(f"/api/runs/{run_id}/cancel")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    assert api.run(run_id)["error"]["kind"] == "cancelled"
    for action in ("pause", "resume", "cancel"):
        refused = api.client.post(f"/api/runs/{run_id}/{action}")
        assert refused.status_code == 409, action
        assert "ended" in refused.json()["error"]["message"]


def test_resuming_a_run_waiting_for_a_review_pauses_it_again(api: Api) -> None:
    run_id = api.start("reviewed")
    api.wait_status(run_id, "paused")
    assert api.client.post(f"/api/runs/{run_id}/resume").status_code == 202
    still = api.wait_status(run_id, "paused")
    assert api.newest(run_id)["check"]["status"] == "pending"
    assert still["output"] is None


def test_diff_two_runs(api: Api) -> None:
    a, b = api.start("echo"), api.start("echo", {"text": "other"})
    api.wait_status(a, "completed")
    api.wait_status(b, "completed")
    diff = api.client.get(f"/api/runs/{a}/diff/{b}").json()
    assert diff["same_graph"] is True
    assert diff["outputs_equal"] is True
    assert {n["node_id"] for n in diff["nodes"]} == {"draft", "polish"}
    assert api.client.get(f"/api/runs/{a}/diff/nope").status_code == 404
