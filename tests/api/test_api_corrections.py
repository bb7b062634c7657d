"""Corrections over HTTP: override with downstream policies, rerun, review, rollback; their
refusals; and the run continuing in the background when a correction leaves work."""

from __future__ import annotations

from api_helpers import Api, wait_for


def test_override_invalidate_then_rerun(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    url = f"/api/runs/{run_id}/nodes/draft"
    corrected = api.client.post(f"{url}/override", json={"value": {"text": "mine"}, "note": "better"})
    assert corrected.status_code == 200, corrected.text
    assert corrected.json()["stale"] == ["polish"]
    run = api.run(run_id)
    assert run["stale"] == ["polish"]
    draft = api.newest(run_id)["draft"]
    assert (draft["effective_output"]["text"], draft["output"]["text"]) == ("mine", "drafted")
    assert (draft["override_by"], draft["override_note"]) == ("api", "better")
    rerun = api.client.post(f"/api/runs/{run_id}/nodes/polish/rerun", json={})
    assert rerun.json()["queued"] == ["polish"]
    api.wait_status(run_id, "completed")
    polish = api.newest(run_id)["polish"]
    assert (polish["activation"], polish["status"]) == (2, "completed")
    assert "Polish mine" in str(api.client.get(f"/api/node-runs/{polish['id']}").json()["input_snapshot"])


def test_override_with_rerun_policy_drives_the_run(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    response = api.client.post(
        f"/api/runs/{run_id}/nodes/draft/override", json={"value": {"text": "x"}, "policy": "RERUN"}
    )
    assert response.json()["queued"] == ["polish"]
    api.wait_status(run_id, "completed")
    assert api.newest(run_id)["polish"]["activation"] == 2


def test_override_refusals(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    url = f"/api/runs/{run_id}/nodes"
    schema = api.client.post(f"{url}/draft/override", json={"value": {"text": 5}})
    assert schema.status_code == 422
    assert schema.json()["error"]["details"]
    assert api.client.post(f"{url}/ghost/override", json={"value": {"text": "a"}}).status_code == 404
    assert api.client.post("/api/runs/nope/nodes/draft/override", json={"value": {"text": "a"}}).status_code == 404
    bad_policy = api.client.post(f"{url}/draft/override", json={"value": {"text": "a"}, "policy": "MAYBE"})
    assert bad_policy.status_code == 422
    assert api.client.post(f"{url}/draft/override", json={}).status_code == 422
    assert api.client.post(f"{url}/draft/override", json={"value": {}, "extra": 1}).status_code == 422


def test_review_approve_and_correct(api: Api) -> None:
    run_id = api.start("reviewed")
    api.wait_status(run_id, "paused")
    url = f"/api/runs/{run_id}/nodes/check/review"
    assert api.client.post(url, json={"approve": True, "value": {"text": "x"}}).status_code == 422
    assert api.client.post(url, json={}).status_code == 422
    assert api.client.post(url, json={"value": {"text": 1}}).status_code == 422
    assert api.client.post(f"/api/runs/{run_id}/nodes/draft/review", json={"approve": True}).status_code == 422
    answered = api.client.post(url, json={"value": {"text": "reviewed"}, "note": "tone fixed"})
    assert answered.status_code == 200, answered.text
    done = api.wait_status(run_id, "completed")
    assert done["output"] == {"text": "polished"}
    check = api.newest(run_id)["check"]
    assert (check["status"], check["override_note"]) == ("overridden", "tone fixed")
    again = api.client.post(url, json={"approve": True})
    assert again.status_code == 409  # not waiting any more
    other = api.start("reviewed")
    api.wait_status(other, "paused")
    assert api.client.post(f"/api/runs/{other}/nodes/check/review", json={"approve": True}).status_code == 200
    api.wait_status(other, "completed")
    assert api.newest(other)["check"]["override_note"] == "approved in review"  # the default note


def test_rollback_restores_a_version_and_marks_readers_stale(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    api.client.post(f"/api/runs/{run_id}/nodes/draft/override", json={"value": {"text": "v2"}, "policy": "KEEP"})
    back = api.client.post(f"/api/runs/{run_id}/rollback", json={"target": "draft", "to_version": 1})
    assert back.status_code == 200, back.text
    assert api.newest(run_id)["draft"]["effective_output"]["text"] == "drafted"
    missing = api.client.post(f"/api/runs/{run_id}/rollback", json={"target": "draft", "to_version": 9})
    assert missing.status_code == 404
    assert "its versions" in missing.json()["error"]["hint"]
    assert api.client.post(f"/api/runs/{run_id}/rollback", json={"target": "draft", "to_version": 0}).status_code == 422


def test_a_correction_on_a_run_that_is_executing_is_refused_or_written_beside_it(api: Api) -> None:
    run_id = api.start("slow")
    wait_for(lambda: api.newest(run_id).get("crawl", {}).get("status") == "running", what="crawl to start")
    rerun = api.client.post(f"/api/runs/{run_id}/nodes/first/rerun", json={})
    assert rerun.status_code == 409  # the engine holds the run
    assert "busy" in rerun.json()["error"]["message"]
    assert api.client.post(f"/api/runs/{run_id}/cancel").status_code == 200


BREAKS = """
plait: 1
id: breaks
schemas:
  - id: text
    version: 1.0.0
    schema: {type: object, properties: {text: {type: string}}, required: [text]}
nodes:
  - {id: parse, type: TRANSFORM, transform_expr: "JSON.parse(input.text)"}
  - {id: polish, type: LLM_CALL, system_prompt: Polish., user_prompt_tpl: "Polish {{ parse.text }}"}
edges:
  - {source: parse, target: polish, schema_id: text}
  - {source: polish, target: END, schema_id: text}
"""


def test_a_failed_node_given_its_output_lets_the_run_finish(api: Api) -> None:
    assert api.client.post("/api/graphs", json={"source": BREAKS}).status_code == 201
    run_id = api.start("breaks", {"text": "not JSON"})
    api.wait_status(run_id, "failed")
    url = f"/api/runs/{run_id}/nodes/parse/override"
    assert api.client.post(url, json={"value": {"text": 5}}).status_code == 422
    corrected = api.client.post(url, json={"value": {"text": "fixed"}, "note": "parsed it by hand"})
    assert corrected.status_code == 200, corrected.text
    done = api.wait_status(run_id, "completed")
    assert done["output"] == {"text": "polished"}
    parse, polish = api.newest(run_id)["parse"], api.newest(run_id)["polish"]
    assert (parse["status"], parse["effective_output"]["text"], parse["override_note"]) == (
        "overridden", "fixed", "parsed it by hand"
    )  # fmt: skip
    assert "Polish fixed" in str(api.client.get(f"/api/node-runs/{polish['id']}").json()["input_snapshot"])
