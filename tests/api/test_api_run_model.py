"""A run's own model, its refusals and its deletion over a real server: a review answered
through the server continues on the model the run was started with; `DELETE /api/runs/{id}`
removes a run with what hangs off it; cancel stops a paused run for good."""

from __future__ import annotations

import asyncio
from pathlib import Path

from api_helpers import SCRIPT, Api

from plait.engine.runner import Engine
from plait.runs.model_choice import chosen
from plait.runs.start import start_run


def test_a_review_answered_through_the_server_uses_the_runs_own_model(api: Api, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text(SCRIPT.replace("polished", "polished elsewhere"))
    provider, selection = chosen(f"scripted:{other}", None)
    run_id = start_run(api.store, "reviewed", {"text": "hi"}, llm=selection)  # as `plait run --llm` does
    assert asyncio.run(Engine(api.store, provider, llm=selection).run(run_id)).status == "paused"
    answered = api.client.post(f"/api/runs/{run_id}/nodes/check/review", json={"approve": True})
    assert answered.status_code == 200, answered.text
    done = api.wait_status(run_id, "completed", "failed")
    assert done["output"] == {"text": "polished elsewhere"}  # not the server's own script
    assert done["llm"] == {"llm": f"scripted:{other.resolve()}"}
    assert done["llm_history"] == []


def test_runs_started_here_record_the_servers_model(api: Api) -> None:
    run_id = api.start("echo")
    run = api.wait_status(run_id, "completed")
    assert run["llm"] == {"llm": f"scripted:{api.script.resolve()}"}


def test_delete_a_run_over_http(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    refused = api.client.delete(f"/api/runs/{run_id}")
    assert refused.status_code == 409
    assert "ended" in refused.json()["error"]["message"]
    assert "?force=true" in refused.json()["error"]["hint"]
    gone = api.client.delete(f"/api/runs/{run_id}", params={"force": "true"})
    assert gone.status_code == 200, gone.text
    assert gone.json()["deleted"] is True
    assert gone.json()["node_runs"] == 2
    assert api.client.get(f"/api/runs/{run_id}").status_code == 404
    assert api.client.delete(f"/api/runs/{run_id}").status_code == 404


def test_a_paused_run_is_cancelled_then_deleted_without_force_only_before(api: Api) -> None:
    paused = api.start("reviewed")
    api.wait_status(paused, "paused")
    assert api.client.delete(f"/api/runs/{paused}").status_code == 200  # unfinished: no force needed
    other = api.start("reviewed")
    api.wait_status(other, "paused")
    cancelled = api.client.post(f"/api/runs/{other}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    assert api.client.post(f"/api/runs/{other}/resume").status_code == 409
    assert api.client.delete(f"/api/runs/{other}").status_code == 409
