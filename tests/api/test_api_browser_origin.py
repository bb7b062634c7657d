"""A server that asks for no token is still not a tool of every web page the browser opens: a
state-changing request from a page of another origin is refused (403), a `Host` that is not
the server's is refused (400: DNS rebinding), redirects never repeat the `Host` a client sent,
and every response carries the browser-facing security headers. Programs (no `Origin`, no
`Sec-Fetch-Site`) are not affected."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import import_graphs, wait_for

from plait.api import ServerSettings
from plait.api.browser import BrowserPolicy
from plait.store import Store
from plait.testing import served_app

ALLOWED_ORIGIN = "http://allowed.example:8000"
FOREIGN = {"Origin": "http://evil.example:1234", "Content-Type": "text/plain"}


@pytest.fixture
def server(store: Store, script: Path) -> Iterator[tuple[httpx.Client, int]]:
    """A default loopback server (no token), with one foreign origin and one extra name allowed."""
    settings = ServerSettings(llm=f"scripted:{script}", cors_origins=(ALLOWED_ORIGIN,), allowed_hosts=("plait.test",))
    with served_app(settings, store=store) as served, served.client() as client:
        import_graphs(client)
        yield client, served.settings.port


def _refused(response: httpx.Response, code: str = "cross_origin_refused") -> None:
    assert response.status_code == (403 if code == "cross_origin_refused" else 400), response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert error["hint"]  # says what to do


def test_pages_of_another_origin_cannot_change_anything(server: tuple[httpx.Client, int]) -> None:
    client, port = server
    run_id = client.post("/api/runs", json={"graph": "reviewed", "input": {"text": "hi"}}).json()["run_id"]
    waiting = wait_for(lambda: (r := client.get(f"/api/runs/{run_id}").json())["status"] == "paused" and r)
    drafts = len([n for n in waiting["nodes"] if n["node_id"] == "draft"])
    node_run = next(n["id"] for n in waiting["nodes"] if n["node_id"] == "draft")
    schedule = client.post("/api/schedules", json={"graph": "echo", "cron": "0 9 * * *", "input": {"text": "x"}})
    schedule_id = schedule.json()["id"]

    # What an attacking page did before: simple text/plain POSTs, which need no CORS preflight.
    _refused(client.post(f"/api/runs/{run_id}/cancel", content=b"{}", headers=FOREIGN))
    _refused(client.post(f"/api/runs/{run_id}/nodes/draft/rerun", content=b'{"downstream": true}', headers=FOREIGN))
    _refused(client.post(f"/api/node-runs/{node_run}/replay", content=b"{}", headers=FOREIGN))
    _refused(client.post(f"/api/schedules/{schedule_id}/pause", content=b"{}", headers=FOREIGN))
    _refused(client.post("/api/graphs/echo/fork", content=b'{"name": "stolen"}', headers=FOREIGN))
    _refused(client.post(f"/api/runs/{run_id}/cancel", headers={"Origin": "null"}))  # a sandboxed frame, a file
    _refused(client.post(f"/api/runs/{run_id}/cancel", headers={"Origin": f"http://127.0.0.1:{port + 1}"}))
    _refused(client.post(f"/api/runs/{run_id}/cancel", headers={"Sec-Fetch-Site": "cross-site"}))  # no Origin
    _refused(client.delete(f"/api/runs/{run_id}?force=true", headers=FOREIGN))

    after = client.get(f"/api/runs/{run_id}").json()
    assert after["status"] == "paused"
    assert len([n for n in after["nodes"] if n["node_id"] == "draft"]) == drafts
    assert client.get(f"/api/schedules/{schedule_id}").json()["status"] == "active"
    assert client.get("/api/graphs/stolen").status_code == 404

    # The server's own pages, an origin the deployer allowed, and programs still act.
    own = client.post("/api/graphs/echo/fork", json={"name": "own"}, headers={"Origin": f"http://127.0.0.1:{port}"})
    assert own.status_code == 201, own.text
    local = {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}", "Sec-Fetch-Site": "same-origin"}
    assert client.post(f"/api/schedules/{schedule_id}/pause", headers=local).status_code == 200
    allowed = client.post("/api/graphs/echo/fork", json={"name": "allowed"}, headers={"Origin": ALLOWED_ORIGIN})
    assert allowed.status_code == 201, allowed.text
    assert client.post(f"/api/runs/{run_id}/cancel").status_code == 200  # curl, the CLI: no Origin
    assert client.get(f"/api/runs/{run_id}").json()["status"] == "cancelled"


def test_every_state_changing_operation_refuses_another_origin(server: tuple[httpx.Client, int]) -> None:
    """Every POST, PUT, PATCH and DELETE of /openapi.json: a route added later is covered too."""
    client, _ = server
    called = 0
    for path, operations in client.get("/openapi.json").json()["paths"].items():
        concrete = path.replace("{", "").replace("}", "")
        for method in operations:
            if method.upper() in {"POST", "PUT", "PATCH", "DELETE"}:
                _refused(client.request(method.upper(), concrete, content=b"{}", headers=FOREIGN))
                called += 1
    assert called >= 30
    assert client.get("/api/graphs", headers=FOREIGN).status_code == 200  # reading is not acting


def test_a_host_that_is_not_the_servers_is_refused(server: tuple[httpx.Client, int]) -> None:
    client, port = server
    for host in ("evil.example", f"evil.example:{port}", "10.0.0.7", "plait.test.evil.example", "127.0.0.1.nip.io"):
        _refused(client.get("/api/health", headers={"Host": host}), "host_not_allowed")
    _refused(client.post("/api/graphs/echo/fork", json={"name": "rebound"}, headers={"Host": "evil.example"}),
             "host_not_allowed")  # fmt: skip
    assert client.get("/api/graphs/rebound").status_code == 404
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "LOCALHOST", "plait.test", "a.localhost"):
        assert client.get("/api/health", headers={"Host": host}).status_code == 200, host


def test_beyond_loopback_any_address_and_the_allowed_names_are_the_server() -> None:
    policy = BrowserPolicy.of(ServerSettings(host="0.0.0.0", allowed_hosts=("plait.internal",)))
    assert policy.host_allowed("192.168.1.20:8765")
    assert policy.host_allowed("[fe80::1]:8765")
    assert policy.host_allowed("plait.internal:8765")
    assert not policy.host_allowed("rebound.evil.example")
    assert BrowserPolicy.of(ServerSettings(host="0.0.0.0", allowed_hosts=("*",))).host_allowed("any.example")


def test_redirects_are_relative_and_every_response_is_guarded(server: tuple[httpx.Client, int]) -> None:
    client, port = server
    slash = client.get("/api/runs/", headers={"Host": f"localhost:{port}"})
    assert slash.status_code == 307
    assert slash.headers["location"] == "/api/runs"  # never built from the Host header
    sneaky = client.get("//evil.example/", headers={"Host": f"localhost:{port}"})
    assert not sneaky.headers.get("location", "/").startswith("//")
    for response in (
        client.get("/api/health"),
        client.get("/api/runs/nope"),
        client.get("/"),
        slash,
        client.post("/api/runs/x/cancel", headers=FOREIGN),
        client.get("/api/health", headers={"Host": "evil.example"}),
    ):
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
