"""A real `plait run` on PostgreSQL whose database connections are all dropped
(`pg_terminate_backend`, only this test's backends) while its node's model call is in flight:
the answer that then arrives is written on a fresh connection, the run completes, and the model
was paid once. It used to crash with an internal error and throw the paid answer away."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import yaml

from plait.model.enums import NodeStatus, RunStatus
from plait.store import Store
from tests.api.api_helpers import wait_for
from tests.conftest import pg_schema_url, terminate_backends
from tests.plait_cli import start_plait
from tests.worker.counting_server import PAID_THEN_SHAPED, counting_server, openai_config


def test_plait_run_keeps_the_paid_answer_when_the_database_drops_its_connections(
    tmp_path: Path, pg_schema: str
) -> None:
    db = pg_schema_url(pg_schema)
    gate = threading.Event()
    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(PAID_THEN_SHAPED))
    with counting_server(latency_s=0.0, gate=gate) as (url, counts):
        (tmp_path / "plait.toml").write_text(openai_config(url))
        env = {**os.environ, "PLAIT_DB": db, "PLAIT_CONFIG": str(tmp_path / "plait.toml")}
        running = start_plait(
            "run",
            "graph.yaml",
            "--json",
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: counts.arrivals or running.poll() is not None, timeout=60, what="the model call")
            assert terminate_backends(pg_schema) >= 1  # every connection of the run's process
        finally:
            gate.set()  # the answer arrives on a process whose connections are all gone
        out, err = running.communicate(timeout=120)
    assert running.returncode == 0, err
    result = json.loads(out)
    assert (result["status"], result["output"]) == ("completed", {"said": "ok"})
    assert len(counts.arrivals) == 1  # paid once: the answer was written, not thrown away
    with Store(db) as store:
        assert store.runs.get(result["run_id"]).status == RunStatus.COMPLETED
        [a] = [n for n in store.runs.node_runs(result["run_id"]) if n.node_id == "a"]
        assert (a.status, a.claims) == (NodeStatus.COMPLETED, 1)
