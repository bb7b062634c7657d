"""Faults a running `plait serve` must survive, and inputs that used to crash it, over HTTP:

- the database dropping every connection (`pg_terminate_backend`, only this test's backends)
  while a run's model call is in flight: the answer is written, the run completes, the model
  was paid once (a real `plait serve` process on PostgreSQL);
- the database away longer than the engine retries its writes: the run stops unfailed and the
  server drives it again once the database answers, without anyone resuming it by hand;
- a cron that never fires, or one of six fields, is refused with 422 and the reason, not 500.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
import yaml
from api_helpers import Api, free_port, wait_for

from plait.api import executor
from plait.engine import commits
from plait.store import Store
from plait.testing import served_app, wait_until_healthy
from tests.conftest import pg_schema_url, terminate_backends
from tests.plait_cli import start_plait
from tests.worker.counting_server import PAID_THEN_SHAPED, counting_server, openai_config


def test_plait_serve_keeps_the_paid_answer_when_the_database_drops_its_connections(
    tmp_path: Path, pg_schema: str
) -> None:
    db, port, gate = pg_schema_url(pg_schema), free_port(), threading.Event()
    with counting_server(latency_s=0.0, gate=gate) as (url, counts):
        (tmp_path / "plait.toml").write_text(openai_config(url))
        env = {**os.environ, "PLAIT_DB": db, "PLAIT_CONFIG": str(tmp_path / "plait.toml")}
        log = (tmp_path / "serve.log").open("w")
        server = start_plait(
            "serve", "--port", str(port), "--no-schedules", cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_healthy(base, alive=lambda: server.poll() is None)
            with httpx.Client(base_url=base, timeout=30) as client:
                stored = client.post("/api/graphs", json={"source": yaml.safe_dump(PAID_THEN_SHAPED)})
                assert stored.status_code == 201, stored.text
                started = client.post("/api/runs", json={"graph": "answer_then_shape", "input": {}})
                assert started.status_code == 202, started.text
                run_id = started.json()["run_id"]
                try:
                    wait_for(lambda: counts.arrivals, timeout=60, what="the model call")
                    assert terminate_backends(pg_schema) >= 1  # every connection the server holds
                finally:
                    gate.set()
                run = wait_for(lambda: _ended(client, run_id), timeout=60, what="the run to end")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    assert (run["status"], run["output"]) == ("completed", {"said": "ok"}), (tmp_path / "serve.log").read_text()
    assert len(counts.arrivals) == 1
    with Store(db) as store:
        [a] = [n for n in store.runs.node_runs(run_id) if n.node_id == "a"]
        assert a.claims == 1


def _ended(client: httpx.Client, run_id: str) -> dict[str, object] | None:
    run: dict[str, object] = client.get(f"/api/runs/{run_id}").json()
    return run if run["status"] in ("completed", "failed") and not run["executing_here"] else None


def test_a_run_the_database_stopped_is_driven_again_by_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite's write lock held by another process for longer than the engine retries: the run
    stops, not failed, and the server drives it again once the lock is free."""
    from plait.store import db as store_db

    monkeypatch.setattr(commits, "RETRY_S", 0.3)
    monkeypatch.setattr(executor, "RELAUNCH_S", 0.5)
    caplog.set_level(logging.WARNING)
    gate = threading.Event()
    with counting_server(latency_s=0.0, gate=gate) as (url, counts):
        (tmp_path / "plait.toml").write_text(openai_config(url))
        monkeypatch.setenv("PLAIT_CONFIG", str(tmp_path / "plait.toml"))
        pragmas = tuple(
            "PRAGMA busy_timeout=100" if p.startswith("PRAGMA busy") else p for p in store_db.SQLITE_PRAGMAS
        )
        monkeypatch.setattr(store_db, "SQLITE_PRAGMAS", pragmas)
        path = tmp_path / "plait.db"
        store = Store(f"sqlite:///{path}")  # its connections wait 0.1 s for a lock, not 5 s
        serving = served_app(store=store, config=str(tmp_path / "plait.toml"), schedules=False)
        with serving as served, served.client() as client:
            assert client.post("/api/graphs", json={"source": yaml.safe_dump(PAID_THEN_SHAPED)}).status_code == 201
            run_id = client.post("/api/runs", json={"graph": "answer_then_shape", "input": {}}).json()["run_id"]
            wait_for(lambda: counts.arrivals, timeout=60, what="the model call")
            locker = sqlite3.connect(path, isolation_level=None)
            locker.execute("BEGIN IMMEDIATE")  # another process's writer, holding the lock
            gate.set()
            wait_for(lambda: "driving it again" in caplog.text, timeout=60, what="the run to stop")
            locker.execute("ROLLBACK")
            run = wait_for(lambda: _ended(client, run_id), timeout=60, what="the server to finish the run")
        store.close()
    assert (run["status"], run["output"]) == ("completed", {"said": "ok"})
    assert len(counts.arrivals) == 2  # the answer the database never took was asked again, once


@pytest.mark.parametrize(
    ("cron", "says"),
    [("0 0 31 2 *", "never fires: no date matches it"), ("* * * * * *", "a sixth field would be seconds")],
)
def test_a_cron_that_never_fires_or_has_six_fields_is_refused_with_422(api: Api, cron: str, says: str) -> None:
    refused = api.client.post("/api/schedules", json={"graph": "echo", "cron": cron, "input": {"text": "x"}})
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert says in error["message"]
    assert "five fields" in error["hint"]
    assert api.client.get("/api/schedules").json() == []
