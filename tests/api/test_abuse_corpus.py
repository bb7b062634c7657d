"""The abuse corpus: hostile requests to a running `plait serve` on loopback. Each one is refused
with a 4xx that says what is wrong, never a 5xx; the server keeps answering `/api/health` while
and after it is attacked; nothing it stores makes a later read fail. On SQLite and PostgreSQL.

The sandbox's own escape corpus is in tests/sandbox/; this file attacks through the HTTP surface
what an attacker who can send graphs and inputs reaches."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import httpx
import pytest
from api_helpers import Api, wait_for

from tests.compile.counting_server import counting_server

DEEP_BODY = '{"graph": "echo", "input": {"text": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}}"


def nested(levels: int) -> object:
    value: object = "x"
    for _ in range(levels):
        value = {"v": value}
    return value


@dataclass(frozen=True)
class Attack:
    name: str
    method: str
    path: str
    body: str
    status: int

    def send(self, client: httpx.Client) -> httpx.Response:
        return client.request(
            self.method, self.path, content=self.body.encode("utf-8"), headers={"content-type": "application/json"}
        )


def graph_body(source: str) -> str:
    return json.dumps({"source": source})


TRANSFORM_GRAPH = """
plait: 1
id: {id}
nodes:
  - {{id: t, type: TRANSFORM, transform_expr: "({{n: 1}})", timeout_s: {timeout}}}
"""

SURROGATE_NAME = (
    r'"plait: 1\nid: sur\nname: \"a\\ud800\"\nnodes:\n  - {id: t, type: TRANSFORM, transform_expr: \"1\"}\n"'
)


def transform_graph(timeout: str) -> str:
    return graph_body(TRANSFORM_GRAPH.format(id=f"t{len(timeout)}", timeout=timeout))


def run_body(extra: str) -> str:
    """A start of the `echo` graph whose input has `extra` (JSON text) beside a valid `text`."""
    return '{"graph": "echo", "input": {"text": "x", "extra": ' + extra + "}}"


CORPUS = [
    Attack("a lone surrogate in a run input", "POST", "/api/runs", run_body(r'"a\ud800b"'), 422),
    Attack("a lone surrogate in a graph name", "POST", "/api/graphs", '{"source": ' + SURROGATE_NAME + "}", 422),
    Attack("a run input nested 900 levels", "POST", "/api/runs", run_body(json.dumps(nested(900))), 422),
    Attack("a body nested 100,000 levels", "POST", "/api/runs", DEEP_BODY, 422),
    Attack("NaN in a run input", "POST", "/api/runs", run_body("NaN"), 422),
    Attack("1e400 in a run input", "POST", "/api/runs", run_body("1e400"), 422),
    Attack("an integer of 5,000 digits in a run input", "POST", "/api/runs", run_body("9" * 5000), 422),
    Attack("timeout_s of 2,200,000 s", "POST", "/api/graphs", transform_graph("2200000"), 422),
    Attack("timeout_s of .inf", "POST", "/api/graphs", transform_graph(".inf"), 422),
]


@pytest.mark.parametrize("attack", CORPUS, ids=[a.name for a in CORPUS])
def test_a_hostile_request_is_refused_with_a_4xx_and_the_server_stays_up(api: Api, attack: Attack) -> None:
    response = attack.send(api.client)
    assert response.status_code == attack.status, response.text[:2000]
    error = response.json()["error"]
    assert error["message"], error
    assert api.client.get("/api/health").status_code == 200
    assert api.client.get("/api/runs").status_code == 200  # nothing stored breaks a later read


def test_schema_references_to_urls_are_refused_and_never_fetched(api: Api) -> None:
    with counting_server() as server:
        refused_and_never_fetched(api, server.url)
        assert server.requests == []


def refused_and_never_fetched(api: Api, url: str) -> None:
    as_edge = f"""
plait: 1
id: ssrf_edge
schemas:
  - {{id: s, schema: {{type: object, properties: {{a: {{$ref: "{url}/schema.json"}}}}}}}}
nodes:
  - {{id: t, type: TRANSFORM, transform_expr: "({{a: 1}})"}}
edges:
  - {{source: t, target: END, schema_id: s}}
"""
    as_input = f"""
plait: 1
id: ssrf_input
input_schema: {{type: object, properties: {{x: {{allOf: [{{$ref: "{url}/input.json"}}]}}}}}}
nodes:
  - {{id: t, type: TRANSFORM, transform_expr: "({{a: 1}})"}}
"""
    for source in (as_edge, as_input):
        response = api.client.post("/api/graphs", json={"source": source})
        assert response.status_code == 422, response.text
        assert url in response.text
        assert api.client.post("/api/graphs/validate", json={"source": source}).status_code in (200, 422)


def test_a_catastrophic_pattern_does_not_hold_the_server(api: Api) -> None:
    source = r"""
plait: 1
id: redos
input_schema: {type: object, properties: {text: {type: string, pattern: "^(a+)+$"}}, required: [text]}
nodes:
  - {id: t, type: TRANSFORM, transform_expr: "({n: 1})"}
"""
    assert api.client.post("/api/graphs", json={"source": source}).status_code == 201
    started = time.monotonic()
    response = api.client.post("/api/runs", json={"graph": "redos", "input": {"text": "a" * 5000 + "!"}})
    assert response.status_code == 422, response.text
    assert time.monotonic() - started < 5  # exponential backtracking would take longer than the universe


def test_an_unstorable_node_output_fails_the_run_and_every_read_still_answers(api: Api) -> None:
    source = r"""
plait: 1
id: bad_output
nodes:
  - {id: t, type: TRANSFORM, transform_expr: "({text: 'a\\ud800b'})"}
"""
    assert api.client.post("/api/graphs", json={"source": source}).status_code == 201
    response = api.client.post("/api/runs", json={"graph": "bad_output", "input": {}})
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]
    run = api.wait_status(run_id, "failed")
    node = next(n for n in run["nodes"] if n["node_id"] == "t")
    assert node["error"]["kind"] == "output"
    assert api.client.get(f"/api/node-runs/{node['id']}").status_code == 200


def test_not_found_messages_never_name_the_database(api: Api) -> None:
    for path in ("/api/runs/nope", "/api/graphs/nope", "/api/node-runs/nope"):
        response = api.client.get(path)
        assert response.status_code == 404
        text = response.text.lower()
        for leak in ("sqlite", "postgresql", ".db"):
            assert leak not in text, response.text


def test_a_huge_last_event_id_is_refused(api: Api) -> None:
    run_id = api.start("echo")
    api.wait_status(run_id, "completed")
    response = api.client.get(f"/api/runs/{run_id}/events", headers={"Last-Event-ID": "9" * 10_000})
    assert 400 <= response.status_code < 500, response.text[:500]
    wait_for(lambda: api.client.get("/api/health").status_code == 200, what="health")
