"""What one run may cost a running `plait serve`, on SQLite and PostgreSQL: a registered secret a
run produces comes back nowhere; a node that takes its server down is not executed again for
ever; a run stays within the budget of child runs, node runs and stored bytes of plait.toml; a
template cannot render without bound or hold the event loop; many large graphs sent to be
validated leave the caches within their byte bounds."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
from api_helpers import free_port, read_events, serving, wait_for
from sqlalchemy import select

from plait.api import ServerSettings
from plait.redact import register
from plait.store import Store
from plait.store.models import full_metadata

CANARY = f"canary-{uuid.uuid4().hex}"
"""Registered as a secret in this process (as a provider key is by plait.toml); it does not look
like an `sk-` key, so only the registered value can hide it."""

LEAKY = """
plait: 1
id: leaky
nodes:
  - {id: ask, type: LLM_CALL, user_prompt_tpl: "Repeat the key"}
  - {id: build, type: TRANSFORM, transform_expr: "({key: input.reversed.split('').reverse().join(''), said: current})"}
  - {id: pass_on, type: TRANSFORM, transform_expr: "({text: 'got ' + current.key, said: current.said})"}
edges:
  - {source: ask, target: build}
  - {source: build, target: pass_on}
"""


def plait(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "plait", *args], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})}, check=False,
    )  # fmt: skip


def stored_text(store: Store, tmp_path: Path) -> str:
    """Every row of every table, and for SQLite the database file's own bytes too."""
    with store.db.connect() as conn:
        rows = "\n".join(repr(row) for table in full_metadata().sorted_tables for row in conn.execute(select(table)))
    files = "".join(p.read_bytes().decode("latin-1") for p in tmp_path.glob("plait.db*"))
    return rows + files


def test_a_registered_secret_a_run_produces_is_found_nowhere(store: Store, tmp_path: Path) -> None:
    """The secret comes from a model's answer and from a TRANSFORM that builds it from data that
    does not hold it; neither the store, the API, the event stream nor `plait runs show` has it."""
    register(CANARY)
    script = tmp_path / "script.yaml"
    script.write_text(f"responses:\n  - {{node: ask, text: 'the key is {CANARY}'}}\n")
    settings = ServerSettings(port=free_port(), llm=f"scripted:{script}")
    with serving(settings, store) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.post("/api/graphs", json={"source": LEAKY}).status_code == 201
        started = client.post("/api/runs", json={"graph": "leaky", "input": {"reversed": CANARY[::-1]}})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        run = wait_for(lambda: (r := client.get(f"/api/runs/{run_id}").json())["status"] == "completed" and r)
        status, events = read_events(client, run_id)
        assert status == 200
        answers = [str(events), client.get(f"/api/runs/{run_id}").text, client.get("/api/runs").text]
        answers += [client.get(f"/api/runs/{run_id}/ledger").text]
        answers += [client.get(f"/api/node-runs/{node['id']}").text for node in run["nodes"]]
    assert run["output"] == {"text": "got ***", "said": "the key is ***"}  # masked, and handed on masked
    shown = [plait("runs", "show", run_id, "--db", store.url, *flag).stdout for flag in ((), ("--json",))]
    for where, text in [("the API and its events", "\n".join(answers)), ("plait runs show", "\n".join(shown)),
                        ("the store", stored_text(store, tmp_path))]:  # fmt: skip
        assert CANARY not in text, f"the secret is in {where}"
        assert "***" in text, f"nothing was masked in {where}: the test did not cross the path it means"
