"""A provider that echoes the API key it was sent (a 401 "Incorrect API key provided: ...", a 500
quoting the Authorization header), and a provider URL with `user:pass@` and `?api-key=`: a
canary key pushed through every path is found nowhere: not in the rows of SQLite or PostgreSQL
nor the SQLite file's bytes, logs, `plait run` / `runs show` (and `--json`), `config check`,
nor anything `plait serve` returns (runs, node runs, ledger, SSE, /api/providers) or logs.

The canary does not look like an `sk-` key: only the registered value can hide it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fault_server import fault_server
from sqlalchemy import select

from plait.config import load_config
from plait.engine.runner import Engine
from plait.llm.pool import ProviderPool
from plait.runs.start import start_run
from plait.store import Store
from plait.store.models import full_metadata
from plait.testing import wait_until_healthy
from tests.plait_cli import run_plait

KEY_ENV = "PLAIT_TEST_CANARY_KEY"
CANARY = f"canary-{uuid.uuid4().hex}"
URL_PASSWORD = f"urlpw{uuid.uuid4().hex}"
URL_QUERY_KEY = f"qk{uuid.uuid4().hex}"
SECRETS = (CANARY, URL_PASSWORD, URL_QUERY_KEY)
LABEL = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with fault_server() as (url, _):
        yield url


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_project(tmp_path: Path, url: str) -> tuple[Path, Path]:
    """plait.toml (a provider that cannot be reached, with credentials in its URL, then one that
    answers 500 quoting the key, then one that answers 401 quoting it) and a one-node graph."""
    down = f"http://user:{URL_PASSWORD}@127.0.0.1:{closed_port()}/v1?api-key={URL_QUERY_KEY}"
    providers = "".join(
        f'[[providers]]\nid = "{pid}"\nkind = "openai"\nbase_url = "{base}"\napi_key_env = "{KEY_ENV}"\n'
        'json_mode = "json_object_schema"\ntimeout_s = 5.0\nretries = 0\n\n'
        for pid, base in (("down", down), ("p500", url), ("p401", url))
    )
    config = tmp_path / "plait.toml"
    config.write_text(f'{providers}[roles]\nchat = ["down/m", "p500/echo500", "p401/echo401"]\n')
    graph = {
        "id": "echoed",
        "schemas": [{"id": "label", "schema": LABEL}],
        "nodes": [{"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "Label: {{ input.text }}"}],
        "edges": [{"source": "a", "target": "END", "schema_id": "label"}],
    }
    path = tmp_path / "echoed.yaml"
    path.write_text(yaml.safe_dump(graph))
    return config, path


def assert_clean(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"a secret is in {where}"


def assert_echo_happened(text: str) -> None:
    """The run failed the way the test means (so a clean text is not an untested path)."""
    assert "HTTP 401" in text, text[-2000:]
    assert "***" in text


def database_bytes(tmp_path: Path) -> str:
    return "".join(p.read_bytes().decode("latin-1") for p in tmp_path.glob("runs.db*"))


def all_rows(store: Store) -> str:
    with store.db.connect() as conn:
        return "\n".join(repr(row) for table in full_metadata().sorted_tables for row in conn.execute(select(table)))


def test_an_echoed_key_is_in_no_stored_row_and_no_log(
    store: Store, server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(KEY_ENV, CANARY)
    config, graph = write_project(tmp_path, server)
    run_id = start_run(store, str(graph), {"text": "it crashes"})
    engine = Engine(store, ProviderPool(load_config(str(config))), cache=False)

    async def go() -> Any:
        try:
            return await asyncio.wait_for(engine.run(run_id), 60)
        finally:
            await engine.aclose()

    with caplog.at_level(logging.DEBUG):
        outcome = asyncio.run(go())
        logging.getLogger("plait.test").error("provider said %s", f"Incorrect API key provided: {CANARY}")
    assert outcome.status == "failed"
    (node,) = store.runs.node_runs(run_id)
    stored = json.dumps([node.attempts, node.error, node.input_snapshot, store.runs.get(run_id).error])
    assert_echo_happened(stored)
    assert "HTTP 500" in stored
    assert "cannot connect to http://***@127.0.0.1" in stored
    assert_clean(stored, "the node run's attempts, error or snapshot")
    assert_clean(all_rows(store), f"the rows of {store.db.dialect.name}")
    if store.db.dialect.name == "sqlite":
        store.close()
        assert_clean(database_bytes(tmp_path), "the SQLite file")
    logged = "\n".join(f"{r.getMessage()}\n{r.exc_text or ''}" for r in caplog.records)
    assert "provider said Incorrect API key provided: ***" in logged
    assert_clean(logged, "the log")


def plait(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, env=env, timeout=120)


def child_env() -> dict[str, str]:
    return {**os.environ, KEY_ENV: CANARY, "COLUMNS": "400"}


def test_plait_run_runs_show_and_config_check_never_print_an_echoed_key(server: str, tmp_path: Path) -> None:
    config, graph = write_project(tmp_path, server)
    env, db = child_env(), f"sqlite:///{tmp_path / 'runs.db'}"
    ran = plait("run", str(graph), "-i", "text=x", "--db", db, "--config", str(config), "--json", cwd=tmp_path, env=env)
    assert ran.returncode != 0
    run_id = json.loads(plait("runs", "list", "--json", "--db", db, cwd=tmp_path, env=env).stdout)[0]["id"]
    shown = plait("runs", "show", run_id, "--db", db, cwd=tmp_path, env=env)
    as_json = plait("runs", "show", run_id, "--json", "--db", db, cwd=tmp_path, env=env)
    assert_echo_happened(as_json.stdout)
    for where, result in (("plait run", ran), ("runs show", shown), ("runs show --json", as_json)):
        assert_clean(result.stdout + result.stderr, where)
    assert_clean(database_bytes(tmp_path), "the SQLite file")
    checked = plait("config", "check", "--json", "--config", str(config), cwd=tmp_path, env=env)
    table = plait("config", "check", "--config", str(config), cwd=tmp_path, env=env)
    down = json.loads(checked.stdout)["providers"][0]
    assert down["base_url"].startswith("http://***@127.0.0.1:")
    assert down["base_url"].endswith("/v1?api-key=***")
    assert "http://***@127.0.0.1" in table.stdout
    for where, result in (("config check --json", checked), ("config check", table)):
        assert_clean(result.stdout + result.stderr, where)


def sse(client: httpx.Client, run_id: str) -> str:
    with client.stream("GET", f"/api/runs/{run_id}/events", timeout=60) as response:
        lines = []
        for line in response.iter_lines():
            lines.append(line)
            if line.startswith("event: workflow:"):
                break
    return "\n".join(lines)


def test_plait_serve_never_returns_or_logs_an_echoed_key(server: str, tmp_path: Path) -> None:
    config, graph = write_project(tmp_path, server)
    port = closed_port()
    command = [sys.executable, "-m", "plait", "serve", "--port", str(port), "--db", f"sqlite:///{tmp_path / 'runs.db'}",
               "--config", str(config)]  # fmt: skip
    log = tmp_path / "server.log"
    with log.open("w") as out:
        served = subprocess.Popen(command, cwd=tmp_path, env=child_env(), stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_healthy(url, alive=lambda: served.poll() is None, log=log)
        answers = _drive(url, graph)
    finally:
        served.terminate()
        served.wait(timeout=30)
    assert_echo_happened(answers)
    assert "event: workflow:error" in answers
    assert_clean(answers, "the HTTP answers (runs, node runs, ledger, SSE, providers)")
    assert_clean(log.read_text(), "the server's log")
    assert_clean(database_bytes(tmp_path), "the SQLite file")


def _drive(url: str, graph: Path) -> str:
    """Start a run of `graph` over HTTP, follow it to its end; every answer, concatenated."""
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.post("/api/graphs", json={"source": graph.read_text()}).status_code == 201
        run_id = client.post("/api/runs", json={"graph": "echoed", "input": {"text": "x"}}).json()["run_id"]
        answers = [sse(client, run_id)]
        run = client.get(f"/api/runs/{run_id}")
        answers += [run.text, client.get("/api/runs").text, client.get(f"/api/runs/{run_id}/ledger").text]
        answers += [client.get(f"/api/node-runs/{n['id']}").text for n in run.json()["nodes"]]
        providers = client.get("/api/providers")
        assert providers.json()["config"]["providers"][0]["base_url"].startswith("http://***@")
        answers.append(providers.text)
    return "\n".join(answers)
