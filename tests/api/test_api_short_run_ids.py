"""A run is read by a unique prefix of its id, as the workbench and the CLI show ids short: the
answer names the whole id. A prefix shared by several runs, too short or matching nothing is an
error in the API's words (never a CLI command)."""

from __future__ import annotations

from api_helpers import Api


def test_a_unique_prefix_reads_the_run_and_the_answer_names_its_whole_id(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    for prefix in (run_id[:8], run_id[:4], run_id[:8].upper()):
        response = api.client.get(f"/api/runs/{prefix}")
        assert response.status_code == 200, (prefix, response.text)
        assert response.json()["id"] == run_id


def test_an_ambiguous_short_or_unknown_prefix_says_what_to_do(api: Api) -> None:
    stored = api.store.graphs.get("echo")
    twins = ["abcd1111-0000-4000-8000-000000000001", "abcd2222-0000-4000-8000-000000000002"]
    for run_id in twins:
        api.store.runs.add(
            graph_id=stored.graph_id,
            graph_version=stored.version,
            schema_version=stored.schema_version,
            input={"text": "hi"},
            run_id=run_id,
        )
    ambiguous = api.client.get("/api/runs/abcd")
    assert ambiguous.status_code == 409, ambiguous.text
    error = ambiguous.json()["error"]
    assert error["code"] == "ambiguous"
    assert sorted(error["details"]) == twins
    assert error["hint"] == "give more characters of the id"
    assert api.client.get("/api/runs/abcd2").json()["id"] == twins[1]

    short = api.client.get("/api/runs/abc")
    assert short.status_code == 404, short.text
    assert "at least 4 characters" in short.json()["error"]["message"]

    unknown = api.client.get("/api/runs/ffffffff0")
    assert unknown.status_code == 404, unknown.text
    assert unknown.json()["error"]["hint"] == "GET /api/runs lists the runs with their ids"
    assert "plait " not in unknown.text  # no CLI command in an HTTP answer
