"""/api/schedules over a real server: create, list, read with firings, pause, resume, delete;
refusals in HTTP terms; and the server's own scheduler firing a due schedule, whose run it
then executes."""

from __future__ import annotations

import time

from api_helpers import Api, wait_for


def test_schedules_are_created_listed_paused_resumed_and_deleted(api: Api) -> None:
    client = api.client
    made = client.post("/api/schedules", json={"graph": "echo", "cron": "*/5 * * * *", "input": {"text": "hi"}})
    assert made.status_code == 201, made.text
    schedule = made.json()
    assert (schedule["status"], schedule["catch_up"], schedule["timezone"]) == ("active", "one", "UTC")
    assert schedule["next_fire_at"] > time.time()
    assert [s["id"] for s in client.get("/api/schedules").json()] == [schedule["id"]]
    paused = client.post(f"/api/schedules/{schedule['id']}/pause").json()
    assert paused["status"] == "paused"
    resumed = client.post(f"/api/schedules/{schedule['id']}/resume").json()
    assert resumed["status"] == "active"
    assert client.get(f"/api/schedules/{schedule['id']}").json()["firings"] == []
    assert client.delete(f"/api/schedules/{schedule['id']}").status_code == 200
    assert client.get(f"/api/schedules/{schedule['id']}").status_code == 404
    assert client.get("/api/schedules").json() == []


def test_a_bad_schedule_is_refused_with_what_to_fix(api: Api) -> None:
    client = api.client
    bad_cron = client.post("/api/schedules", json={"graph": "echo", "cron": "every day", "input": {"text": "x"}})
    assert bad_cron.status_code == 422
    assert "not a cron expression" in bad_cron.json()["error"]["message"]
    bad_input = client.post("/api/schedules", json={"graph": "echo", "cron": "* * * * *", "input": {}})
    assert bad_input.status_code == 422
    no_graph = client.post("/api/schedules", json={"graph": "nope", "cron": "* * * * *"})
    assert no_graph.status_code == 404
    file_ref = client.post("/api/schedules", json={"graph": "/etc/passwd.yaml", "cron": "* * * * *"})
    assert file_ref.status_code == 404  # a server never reads a file a client names


def test_the_server_fires_a_due_schedule_and_executes_its_run(api: Api) -> None:
    made = api.client.post("/api/schedules", json={"graph": "echo", "cron": "* * * * *", "input": {"text": "tick"}})
    schedule_id = made.json()["id"]
    api.store.schedules.set_status(schedule_id, "active", next_fire_at=time.time() - 1)  # due now
    fired = wait_for(
        lambda: api.client.get(f"/api/schedules/{schedule_id}").json()["firings"], timeout=15, what="a firing"
    )
    run = api.wait_status(fired[0]["run_id"], "completed")
    assert run["input"] == {"text": "tick"}
    assert api.client.get(f"/api/schedules/{schedule_id}").json()["last_run_id"] == fired[0]["run_id"]
