"""A node its repair hook escalated to a person, answered over HTTP with an override (the node has
no output to correct yet: the override is the person's answer, as a review's is), on the /api
route and on the seed's override route."""

from __future__ import annotations

from pathlib import Path

import pytest
from api_helpers import SCRIPT, Api

COUNTING = """
plait: 1
id: counting
schemas:
  - {id: count, schema: {type: object, properties: {count: {type: integer}}, required: [count]}}
nodes:
  - {id: count_words, type: CODE, code: "throw new Error('the input has no words')", repair: true}
  - {id: report, type: TRANSFORM, transform_expr: "({words: nodes.count_words.count})"}
edges:
  - {source: count_words, target: report, schema_id: count}
  - {source: report, target: END}
"""
ESCALATE = '  - {node: count_words, output: {action: escalate, explanation: "count them by hand", confidence: 0.9}}\n'


@pytest.fixture
def script(tmp_path: Path) -> Path:
    """The test graphs' answers, and the repair model's escalation of `count_words`."""
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT + ESCALATE)
    return path


def escalated_run(api: Api) -> str:
    assert api.client.post("/api/graphs", json={"source": COUNTING}).status_code == 201
    run_id = api.start("counting")
    api.wait_status(run_id, "paused")
    assert api.newest(run_id)["count_words"]["status"] == "pending"
    return run_id


def test_an_override_answers_an_escalated_node_and_the_run_goes_on(api: Api) -> None:
    run_id = escalated_run(api)
    url = f"/api/runs/{run_id}/nodes/count_words/override"
    assert api.client.post(url, json={"value": {"count": "three"}}).status_code == 422  # checked as any output
    answered = api.client.post(url, json={"value": {"count": 3}, "note": "counted"})
    assert answered.status_code == 200, answered.text
    done = api.wait_status(run_id, "completed")
    assert done["output"] == {"words": 3}
    counted = api.newest(run_id)["count_words"]
    assert (counted["status"], counted["override_note"]) == ("overridden", "counted")


def test_the_seed_override_route_answers_an_escalated_node_too(api: Api) -> None:
    run_id = escalated_run(api)
    body = {"prompt_graph_run_id": run_id, "node_def_id": "count_words", "override_json": {"count": 2}}
    answered = api.client.post("/PromptGraphNodeOverrideRoute", json=body)
    assert answered.status_code == 200, answered.text
    assert answered.json()["review_answered"] is True
    assert api.wait_status(run_id, "completed")["output"] == {"words": 2}
