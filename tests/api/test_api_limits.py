"""Request bodies Plait cannot store or serve back are refused with 422 naming the field: lone
surrogates, NaN and infinities, nesting past the depth limit, integers past the digit limit.
Bodies are sent as raw bytes: a JSON encoder would refuse (or fix) what a client can send."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from api_helpers import ECHO, Api

from plait.model.limits import MAX_DEPTH

JSON = {"content-type": "application/json"}


def post(api: Api, path: str, body: str, method: str = "POST") -> httpx.Response:
    return api.client.request(method, path, content=body.encode("ascii"), headers=JSON)


def refused(response: httpx.Response, where: str) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    error = dict(response.json()["error"])
    assert error["code"] == "invalid_request"
    assert where in error["message"]
    assert any(d["where"] == where for d in error["details"]), error["details"]
    return error


def runs_total(api: Api) -> int:
    return len(api.client.get("/api/runs").json()["items"])


def test_a_lone_surrogate_in_a_run_input_is_422_naming_the_field(api: Api) -> None:
    error = refused(post(api, "/api/runs", r'{"graph": "echo", "input": {"text": "a\ud800"}}'), "body.input.text")
    assert "surrogate" in error["details"][0]["problem"]
    assert runs_total(api) == 0


def test_a_lone_surrogate_in_a_key_is_422(api: Api) -> None:
    refused(post(api, "/api/runs", r'{"graph": "echo", "input": {"text": "x", "\udc00": 1}}'), "body.input.\\udc00")


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_in_a_run_input_are_422(api: Api, number: str) -> None:
    body = f'{{"graph": "echo", "input": {{"text": "x", "n": {number}}}}}'
    error = refused(post(api, "/api/runs", body), "body.input.n")
    assert "JSON has no NaN or Infinity" in error["details"][0]["problem"]
    assert runs_total(api) == 0


def test_a_run_input_nested_past_the_limit_is_422_and_nothing_is_stored(api: Api) -> None:
    deep = "[" * 900 + "]" * 900
    response = post(api, "/api/runs", f'{{"graph": "echo", "input": {{"text": "x", "deep": {deep}}}}}')
    assert response.status_code == 422, response.text
    (detail,) = response.json()["error"]["details"]
    assert detail["where"].startswith("body.input.deep[0][0]")
    assert detail["problem"] == f"the value is nested deeper than the limit of {MAX_DEPTH} levels"
    assert runs_total(api) == 0


def test_a_body_nested_100k_deep_is_422_with_a_clear_message(api: Api) -> None:
    response = post(api, "/api/runs", '{"graph": "echo", "input": {"deep": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert f"nested deeper than the limit of {MAX_DEPTH} levels" in error["message"]


def test_an_integer_past_the_digit_limit_is_422(api: Api) -> None:
    response = post(api, "/api/runs", '{"graph": "echo", "input": {"n": ' + "7" * 5000 + "}}")
    assert response.status_code == 422, response.text
    assert "more than 4300 digits" in response.json()["error"]["message"]


def test_a_lone_surrogate_in_an_override_value_is_422(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    response = post(api, f"/api/runs/{run_id}/nodes/draft/override", r'{"value": {"text": "\ud83d"}}')
    refused(response, "body.value.text")
    assert api.newest(run_id)["draft"]["override"] is None


GRAPH_NAMED = '{"graph": {"plait": 1, "id": "%s", "name": "bad \\ud800", "nodes": [{"id": "a", "type": "TRANSFORM", "transform_expr": "1"}]}}'  # noqa: E501


@pytest.mark.parametrize(
    ("method", "path", "slug"),
    [("POST", "/api/graphs", "fresh"), ("POST", "/api/graphs/import", "fresh"), ("PUT", "/api/graphs/echo", "echo")],
)
def test_a_lone_surrogate_in_a_graph_name_is_422(api: Api, method: str, path: str, slug: str) -> None:
    refused(post(api, path, GRAPH_NAMED % slug, method), "body.graph.name")
    graphs = {g["slug"]: g for g in api.client.get("/api/graphs").json()["items"]}
    assert "fresh" not in graphs
    assert graphs["echo"]["version"] == 1


def test_a_non_finite_number_in_a_graph_source_is_a_graph_error_naming_the_path(api: Api) -> None:
    source = ECHO.replace("required: [text]}", "required: [text], examples: [{text: .nan}]}", 1)
    response = api.client.put("/api/graphs/echo", json={"source": source})
    assert response.status_code == 422, response.text
    (diagnostic,) = response.json()["error"]["details"]
    assert diagnostic["code"] == "invalid_value"
    assert diagnostic["message"].startswith("input_schema.examples[0].text: nan is not a JSON number")
    assert diagnostic["line"] == 4
    assert api.client.get("/api/graphs/echo").json()["version"] == 1


def test_the_seed_routes_refuse_a_lone_surrogate_too(api: Api) -> None:
    refused(post(api, "/PromptGraphDefForkRoute", r'{"id": "echo", "slug": "f\ud800"}'), "body.slug")
    refused(post(api, "/PromptGraphDefCreateRoute", r'{"name": "\ud800", "nodes": []}'), "body.name")
