"""readRoute: a prompt script run by `plait serve` reads the server's own allowed GET routes,
in-process, in previews and in the runs the server executes (recorded in the snapshot); routes
off the list, traversal and non-plain params are refused with a message the script can catch;
a server that asks for tokens answers its own scripts without handing them one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import SCRIPT, Api, sse_post

from plait.api.route_reader import allowed_path
from plait.sandbox.scripts import HostError
from plait.store import Store
from plait.testing import served_app

GRAPH = """
plait: 1
id: reads_routes
nodes:
  - id: ask
    type: LLM_CALL
    prompt_script:
      code: |
        async function main() {
          const health = await readRoute("/api/health");
          return `server is ${health.status}`;
        }
edges:
  - {source: ask, target: END}
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT + "  - {node: ask, text: fine}\n")
    return path


def script_result(client: httpx.Client, code: str) -> tuple[str, str]:
    """(the last event's type, its text) of a preview of `code`."""
    status, events = sse_post(client, "/api/templates/preview", {"script_code": code})
    assert status == 200, events
    kind, data = events[-1]
    return kind, str(data["args"][0])


@pytest.mark.parametrize(
    ("route", "path"),
    [("/api/runs/r-1", "/runs/r-1"), ("runs/r-1", "/runs/r-1"), ("/templates", "/templates"), ("health/", "/health")],
)
def test_an_allowed_route_is_named_with_or_without_its_api_prefix(route: str, path: str) -> None:
    assert allowed_path(route) == path


@pytest.mark.parametrize(
    "route",
    ["/api/graphs/g/export", "/api/tokens", "/api/runs/r-1/events", "/api/graphs/../tokens", "/api/runs/%2e%2e", "/"],
)
def test_a_route_off_the_list_is_refused(route: str) -> None:
    with pytest.raises(HostError):
        allowed_path(route)


def test_a_preview_reads_allowed_routes_and_catches_a_refusal(api: Api) -> None:
    code = """async function main() {
      const t = await readRoute("/api/templates/plait.summary");
      const page = await readRoute("runs", {limit: 1});
      let refused = "";
      try { await readRoute("/api/graphs/g/export", {}); } catch (e) { refused = e.message; }
      let bad = "";
      try { await readRoute("runs", {limit: {nested: 1}}); } catch (e) { bad = e.message; }
      return [t.source_type, page.limit, refused, bad].join(" | ");
    }"""
    kind, text = script_result(api.client, code)
    assert kind == "result", text
    system, limit, refused, bad = text.split(" | ")
    assert (system, limit) == ("system", "1")
    assert "is not allowed" in refused
    assert "must be a string, a number or a boolean" in bad


def test_a_missing_resource_is_a_refusal_naming_the_status(api: Api) -> None:
    code = 'async function main() { try { await readRoute("/api/runs/nope") } catch (e) { return e.message } }'
    kind, text = script_result(api.client, code)
    assert kind == "result"
    assert "HTTP 404" in text


def test_a_run_executed_by_the_server_reads_a_route_and_records_it(api: Api) -> None:
    assert api.client.post("/api/graphs", json={"source": GRAPH}).status_code == 201
    run_id = api.start("reads_routes", {})
    detail = api.wait_status(run_id, "completed")
    node = next(n for n in detail["nodes"] if n["node_id"] == "ask")
    record = api.client.get(f"/api/node-runs/{node['id']}").json()
    script = record["input_snapshot"]["prompt_script"]
    assert script["prompt"] == "server is ok"
    call = script["host_calls"][0]
    assert call["api"] == "readRoute"
    assert call["value"]["status"] == "ok"


@pytest.fixture
def guarded(store: Store, script: Path) -> Iterator[tuple[str, str]]:
    token = store.tokens.create("editor")[1]
    with served_app(store=store, llm=f"scripted:{script}", require_auth=True) as served:
        yield served.url, token


def test_a_server_that_asks_for_tokens_answers_its_own_scripts(guarded: tuple[str, str]) -> None:
    url, token = guarded
    with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {token}"}) as client:
        code = 'async function main() { return (await readRoute("templates")).length + "" }'
        kind, text = script_result(client, code)
    assert kind == "result", text
    assert int(text) >= 2  # the system templates
    assert httpx.get(f"{url}/api/templates", timeout=10).status_code == 401  # from outside, still a token
