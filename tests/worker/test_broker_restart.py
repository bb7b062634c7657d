"""Redis restarting under a busy worker: the worker reconnects and goes on (it used to stop with
exit code 0, so a supervisor restarting on failure never brought it back). The test runs a Redis
of its own on a free port: the shared one is never restarted."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from worker_helpers import Cluster, need, wait_until

from plait.model.enums import RunStatus
from tests.conftest import pg_schema_url

GRAPH = {
    "id": "slow_think",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "nodes": [{"id": "think", "type": "LLM_CALL", "user_prompt_tpl": "Think about {{ input.text }}"}],
    "edges": [{"source": "think", "target": "END"}],
}


class OwnRedis:
    """A redis-server of the test's own, without persistence (a restart loses everything)."""

    def __init__(self, folder: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        import redis

        client = redis.Redis.from_url(self.url, socket_timeout=1)
        wait_until(lambda: _answers(client), 10, "the test's redis-server to answer")
        client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def _answers(client: object) -> bool:
    import redis

    try:
        return bool(client.ping())  # type: ignore[attr-defined]
    except redis.RedisError:
        return False


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    if shutil.which("redis-server") is None:
        need("redis-server is not installed (the broker restart test runs one of its own)")
    made = OwnRedis(tmp_path)
    made.start()
    try:
        yield made
    finally:
        made.stop()


def test_a_busy_worker_survives_redis_restarting_and_takes_new_runs(
    tmp_path: Path, pg_schema: str, own_redis: OwnRedis
) -> None:
    config = tmp_path / "plait.toml"
    config.write_text(
        '[[providers]]\nid = "fake"\nkind = "scripted"\nfile = "model.yaml"\n[roles]\nchat = "fake/scripted"\n'
        f'[workers]\nbroker = "{own_redis.url}"\nqueue = "q-{uuid.uuid4().hex[:8]}"\nlease_ttl_s = 4\n'
    )
    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    (tmp_path / "model.yaml").write_text(yaml.safe_dump({"responses": [{"text": "a thought", "delay_ms": 4000}]}))
    cluster = Cluster(tmp_path, pg_schema_url(pg_schema), own_redis.url, "", config)
    worker = cluster.worker()
    from plait.runs.start import start_run

    try:
        with cluster.store() as store:
            first = start_run(store, str(tmp_path / "graph.yaml"), {"text": "before"}, announce="start")
            wait_until(lambda: store.runs.get(first).status == RunStatus.RUNNING, 60, "the worker to take the run")
            own_redis.stop()  # the worker is busy: its run's model call takes 4 s
            time.sleep(0.5)
            own_redis.start()  # empty: the broker lost every message
            wait_until(lambda: store.runs.get(first).status == RunStatus.COMPLETED, 60, "the run in flight to end")
            assert worker.poll() is None, f"the worker stopped (exit {worker.returncode}):\n{cluster.logs()}"
            second = start_run(store, str(tmp_path / "graph.yaml"), {"text": "after"}, announce="start")
            wait_until(lambda: store.runs.get(second).status == RunStatus.COMPLETED, 60, "a run queued afterwards")
            assert worker.poll() is None, cluster.logs()
            assert "Unrecoverable error" not in cluster.logs()
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=30)
    assert code == 0, cluster.logs()
