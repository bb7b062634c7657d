"""The server as a whole: auth (tokens, loopback rules), body limit, CORS, errors of unknown
routes, health/providers/docs, `plait token` and `plait serve` refusals, and resuming the
runs a stopped server left unfinished."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import SLOW, Api, free_port, import_graphs, wait_for

from plait.api import ServerConfigError, ServerSettings, create_app
from plait.store import Store
from plait.testing import served_app
from tests.plait_cli import run_plait


def test_health_docs_providers_and_unknown_routes(api: Api) -> None:
    health = api.client.get("/api/health").json()
    assert (health["status"], health["auth_required"]) == ("ok", False)
    assert api.client.get("/docs").status_code == 200
    spec = api.client.get("/openapi.json").json()
    assert "/api/runs/{run_id}/nodes/{node_id}/override" in spec["paths"]
    assert "OverrideIn" in spec["components"]["schemas"]
    assert api.client.get("/api/providers").json()["provider"] == "scripted"
    unknown = api.client.get("/api/nothing")
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "not_found"
    wrong = api.client.delete("/api/runs")
    assert wrong.status_code == 405
    assert wrong.json()["error"]["code"] == "method_not_allowed"
    not_json = api.client.post("/api/runs", content=b"{", headers={"content-type": "application/json"})
    assert not_json.status_code == 422
    assert (
        "access-control-allow-origin"
        not in api.client.get("/api/health", headers={"Origin": "https://x.example"}).headers
    )


@pytest.fixture
def guarded(store: Store, script: Path) -> Iterator[tuple[httpx.Client, str]]:
    """A loopback server with --require-auth and one token; yields a client without a token."""
    _, token = store.tokens.create("ci")
    settings = ServerSettings(
        llm=f"scripted:{script}", require_auth=True, max_body_bytes=2000, cors_origins=("https://app.example",)
    )
    with served_app(settings, store=store) as served, httpx.Client(base_url=served.url, timeout=30) as client:
        yield client, token


def test_a_token_is_needed_when_auth_is_required(guarded: tuple[httpx.Client, str], store: Store) -> None:
    client, token = guarded
    missing = client.get("/api/graphs")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert "Authorization: Bearer" in missing.json()["error"]["hint"]
    assert client.get("/api/graphs", headers={"Authorization": "Bearer plait_wrong"}).status_code == 401
    assert client.get("/api/providers").status_code == 401
    assert client.get("/api/health").status_code == 200  # open: no data
    auth = {"Authorization": f"Bearer {token}"}
    import_graphs(client, headers=auth)
    assert client.get("/api/graphs", headers=auth).status_code == 200
    store.tokens.revoke("ci")
    assert client.get("/api/graphs", headers=auth).status_code == 401


OPEN_PATHS = {"/api/health", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"}


def test_every_route_but_the_open_ones_needs_a_token(guarded: tuple[httpx.Client, str]) -> None:
    """Every operation of /openapi.json, called without a token, is 401: a route added without
    the auth dependency fails here."""
    client, _ = guarded
    document = client.get("/openapi.json").json()
    called = 0
    for path, operations in document["paths"].items():
        concrete = path.replace("{", "").replace("}", "")  # every path parameter becomes its own name
        for method in operations:
            response = client.request(method.upper(), concrete, json={})
            if path in OPEN_PATHS:
                assert response.status_code != 401, (method, path)
                continue
            assert response.status_code == 401, (method, path, response.status_code, response.text[:200])
            called += 1
    assert called >= 35  # the API's routes, not an empty document


def test_corrections_are_recorded_as_the_token(guarded: tuple[httpx.Client, str]) -> None:
    client, token = guarded
    auth = {"Authorization": f"Bearer {token}"}
    import_graphs(client, headers=auth)
    run_id = client.post("/api/runs", json={"graph": "echo", "input": {"text": "a"}}, headers=auth).json()["run_id"]
    wait_for(lambda: client.get(f"/api/runs/{run_id}", headers=auth).json()["status"] == "completed", what="run")
    client.post(f"/api/runs/{run_id}/nodes/draft/override", json={"value": {"text": "b"}}, headers=auth)
    nodes = client.get(f"/api/runs/{run_id}", headers=auth).json()["nodes"]
    assert next(n for n in nodes if n["node_id"] == "draft")["override_by"] == "api:ci"


def test_bodies_over_the_limit_are_413_and_cors_is_opt_in(guarded: tuple[httpx.Client, str]) -> None:
    client, token = guarded
    auth = {"Authorization": f"Bearer {token}"}
    big = {"source": "x" * 5000}
    declared = client.post("/api/graphs", json=big, headers=auth)
    assert declared.status_code == 413
    assert declared.json()["error"]["code"] == "payload_too_large"
    streamed = client.post(
        "/api/graphs",
        content=iter([b'{"source": "', b"x" * 5000, b'"}']),
        headers={**auth, "content-type": "application/json"},
    )
    assert streamed.status_code == 413
    preflight = client.options(
        "/api/graphs",
        headers={"Origin": "https://app.example", "Access-Control-Request-Method": "GET"},
    )
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"


def test_the_server_refuses_to_start_when_no_token_could_authenticate(store: Store) -> None:
    assert ServerSettings(host="0.0.0.0").auth_required
    assert not ServerSettings(host="::1").auth_required
    with pytest.raises(ServerConfigError, match="plait token create"):
        create_app(ServerSettings(host="0.0.0.0"), store=store)
    with pytest.raises(ServerConfigError, match="require-auth"):
        create_app(ServerSettings(require_auth=True), store=store)


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, timeout=120)


def test_token_commands_and_serve_refusal(tmp_path: Path) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 'plait.db'}"]
    refused = plait("serve", "--host", "0.0.0.0", "--port", str(free_port()), *db, cwd=tmp_path)
    assert refused.returncode == 2
    assert "plait token create" in refused.stderr
    created = plait("token", "create", "--name", "ci", *db, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("plait_")
    assert plait("token", "create", "--name", "ci", *db, cwd=tmp_path).returncode == 2  # taken
    listed = json.loads(plait("token", "list", "--json", *db, cwd=tmp_path).stdout)
    assert [t["name"] for t in listed] == ["ci"]
    assert token not in (tmp_path / "plait.db").read_bytes().decode("latin-1")  # only the digest is stored
    assert plait("token", "revoke", "ci", *db, cwd=tmp_path).returncode == 0
    assert json.loads(plait("token", "list", "--json", *db, cwd=tmp_path).stdout) == []
    assert plait("token", "revoke", "ci", *db, cwd=tmp_path).returncode == 2


def test_a_restarted_server_resumes_the_runs_it_left(store: Store, tmp_path: Path) -> None:
    hanging = tmp_path / "hang.yaml"
    hanging.write_text(
        "responses:\n  - {node: first, output: {text: a}}\n  - {node: crawl, output: {text: b}, delay_ms: 60000}\n"
    )
    with served_app(store=store, llm=f"scripted:{hanging}") as served, served.client() as client:
        assert client.post("/api/graphs", json={"source": SLOW}).status_code == 201
        run_id = client.post("/api/runs", json={"graph": "slow", "input": {"text": "x"}}).json()["run_id"]
        wait_for(
            lambda: any(n["node_id"] == "crawl" for n in client.get(f"/api/runs/{run_id}").json()["nodes"]),
            what="crawl to start",
        )
    left = store.runs.get(run_id)
    assert (left.status, left.lease_owner) == ("running", None)  # stopped, resumable
    hanging.write_text("responses:\n  - {node: crawl, output: {text: b}}\n")  # the run's own model, fixed
    other = tmp_path / "other.yaml"
    other.write_text("responses:\n  - {node: crawl, output: {text: not the run's model}}\n")
    with served_app(store=store, llm=f"scripted:{other}") as served, served.client() as client:
        done = wait_for(
            lambda: (r := client.get(f"/api/runs/{run_id}").json())["status"] == "completed" and r, what="resumed run"
        )
    assert done["output"] == {"text": "b"}
    first = [n for n in done["nodes"] if n["node_id"] == "first"]
    assert len(first) == 1  # completed before the stop: not executed again


def test_what_the_fuzzer_found_in_the_error_paths(api: Api) -> None:
    """Regressions found by test_openapi_fuzz.py, pinned on both backends."""
    wrong = api.client.delete("/api/graphs")  # one FastAPI route per method: Allow lists them all
    assert (wrong.status_code, wrong.headers["allow"]) == (405, "GET, POST")
    not_text = api.client.post("/api/runs", content=b"\xff\xfe{", headers={"content-type": "application/json"})
    assert (not_text.status_code, not_text.json()["error"]["code"]) == (422, "invalid_request")  # was 400
    too_big = api.client.get("/api/graphs/echo", params={"version": 2**64})  # was a 500 (OverflowError)
    assert (too_big.status_code, too_big.json()["error"]["code"]) == (422, "invalid_request")
    assert api.client.get("/api/runs", params={"offset": 2**63}).status_code == 422
    nul = api.client.get("/api/graphs/a%00b")  # PostgreSQL text cannot hold NUL: was a 500 (DataError)
    assert nul.status_code in (404, 422)
    assert nul.json()["error"]["code"] in ("not_found", "invalid")
    spec = api.client.get("/openapi.json").json()  # loopback without --require-auth: no security
    assert "securitySchemes" not in spec["components"]
    assert "security" not in spec["paths"]["/api/graphs"]["get"]


def test_providers_shows_the_pool_load_of_a_configured_server(store: Store, tmp_path: Path) -> None:
    """With a plait.toml, model calls go through the provider pool: /api/providers reports each
    provider's calls in flight and queued while runs execute (SPEC §10 providers/pool status)."""
    (tmp_path / "slow.yaml").write_text("responses:\n  - {output: {text: done}, delay_ms: 1500}\n")
    (tmp_path / "plait.toml").write_text(
        '[[providers]]\nid = "only"\nkind = "scripted"\nfile = "slow.yaml"\nmax_concurrency = 1\n'
        'models = [{ name = "m" }]\n\n[roles]\nchat = "only/m"\n'
    )
    with served_app(store=store, config=str(tmp_path / "plait.toml")) as served, served.client() as client:
        import_graphs(client)
        idle = client.get("/api/providers").json()
        assert idle["provider"] == "pool"
        assert [(r["id"], r["in_flight"], r["queued"], r["max_concurrency"]) for r in idle["load"]] == [
            ("only", 0, 0, 1)
        ]
        for text in ("a", "b"):
            assert client.post("/api/runs", json={"graph": "echo", "input": {"text": text}}).status_code == 202
        busy = wait_for(lambda: (row := client.get("/api/providers").json()["load"][0])["queued"] >= 1 and row)
        assert busy["in_flight"] == 1  # max_concurrency 1: the other run's call waits for the slot
