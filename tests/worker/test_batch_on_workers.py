"""`plait batch --queue` over real workers: every record finished once; and Redis restarted in
the middle of the batch (a Redis of this test's own, which keeps nothing on disk, so every
queued message is lost with it): nothing is lost (the runs are announced again from the store)
and nothing runs twice (each record has one run, each node one effect)."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from worker_helpers import Cluster, need, wait_until

GRAPH = {
    "id": "clean_on_workers",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "nodes": [
        {"id": "clean", "type": "LLM_CALL", "user_prompt_tpl": "Clean {{ input.text }}"},
        {"id": "keep", "type": "TRANSFORM", "transform_expr": "({text: current, from: input.text})"},
    ],
    "edges": [{"source": "clean", "target": "keep"}, {"source": "keep", "target": "END"}],
}


def setup(cluster: Cluster, records: int, delay_ms: int) -> None:
    (cluster.folder / "graph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    (cluster.folder / "model.yaml").write_text(yaml.safe_dump({"responses": [{"text": "clean", "delay_ms": delay_ms}]}))
    (cluster.folder / "in.jsonl").write_text("".join(json.dumps({"text": f"r{i}"}) + "\n" for i in range(records)))


def batch(cluster: Cluster, *extra: str) -> subprocess.Popen[str]:
    return cluster.start("batch", "graph.yaml", "--input-file", "in.jsonl", "--output", "out.jsonl", "-c", "16",
                         "--quiet", "--json", *extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)  # fmt: skip


def check_once(cluster: Cluster, records: int) -> None:
    done = [json.loads(line) for line in (cluster.folder / "out.jsonl").read_text().splitlines()]
    assert sorted(d["index"] for d in done) == list(range(records))  # each record once
    with cluster.store() as store:
        runs = store.runs.list(limit=10 * records)
        assert len(runs) == records  # one run per record
        for run in runs:
            nodes = store.runs.node_runs(run.id)
            assert [n.node_id for n in nodes if n.status.has_output] == ["clean", "keep"]


def test_a_batch_on_workers_finishes_every_record_once(cluster: Cluster) -> None:
    setup(cluster, 40, delay_ms=100)
    cluster.worker("-c", "8")
    cluster.worker("-c", "8")
    process = batch(cluster)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err + cluster.logs()
    assert json.loads(out)["completed"] == 40
    check_once(cluster, 40)


def test_a_batch_no_worker_takes_says_so_and_resumes_once_a_worker_runs(cluster: Cluster) -> None:
    setup(cluster, 3, delay_ms=0)
    waiting = cluster.start(
        "batch",
        "graph.yaml",
        "--input-file",
        "in.jsonl",
        "--output",
        "out.jsonl",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stop = threading.Timer(120, waiting.send_signal, [signal.SIGINT])  # the line never came: end the wait
    stop.start()
    told = ""
    try:
        for line in waiting.stderr:  # type: ignore[union-attr]
            if "no worker has taken it" in line:
                told = line
                break
    finally:
        stop.cancel()
        waiting.send_signal(signal.SIGINT)
    _, rest = waiting.communicate(timeout=120)
    assert f"is waiting in queue '{cluster.queue}' on {cluster.broker}: no worker has taken it in 5 s" in told
    assert "Ctrl-C stops the batch (continue it with --resume)" in told
    assert waiting.returncode == 130, rest
    cluster.worker()
    resumed = batch(cluster, "--resume")
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err + cluster.logs()
    assert json.loads(out)["completed"] == 3  # the runs the stopped batch had queued, taken by the worker
    check_once(cluster, 3)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[tuple[str, int]]:
    binary = shutil.which("redis-server")
    if binary is None:
        need("redis-server is not installed (apt-get install -y redis-server)")
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    servers: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        servers.append(subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no"], stdout=subprocess.DEVNULL))  # fmt: skip
        import redis

        wait_until(lambda: _pings(redis, port), 60, "redis-server to start")

    start()
    yield f"redis://127.0.0.1:{port}/0", port
    for server in servers:
        server.kill()


def _node_failures(cluster: Cluster) -> str:
    """Each failed node's error and claim counts, to tell why a record failed."""
    with cluster.store() as store:
        return "".join(
            f"{run.id} {n.node_id}: claims {n.claims}, lost {n.lost}: {n.error}\n"
            for run in store.runs.list(limit=1000)
            for n in store.runs.node_runs(run.id)
            if n.status.value == "failed"
        )


def _pings(redis: object, port: int) -> bool:
    try:
        return bool(redis.Redis(port=port, socket_timeout=0.5).ping())  # type: ignore[attr-defined]
    except Exception:
        return False


def test_restarting_redis_in_the_middle_of_a_batch_loses_nothing_and_runs_nothing_twice(
    cluster: Cluster, own_redis: tuple[str, int]
) -> None:
    url, port = own_redis
    cluster.config.write_text(cluster.config.read_text().replace(cluster.broker, url))
    cluster.broker = url
    setup(cluster, 60, delay_ms=300)
    cluster.worker("-c", "8")
    cluster.worker("-c", "8")
    process = batch(cluster)
    output = cluster.folder / "out.jsonl"
    wait_until(lambda: output.exists() and len(output.read_text().splitlines()) >= 10, 120, "10 records")
    import redis

    redis.Redis(port=port).shutdown(nosave=True)  # every queued message is gone with it
    time.sleep(2)  # how long Redis is away: the outage itself, not a wait for something
    binary = shutil.which("redis-server")
    assert binary is not None
    restarted = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no"], stdout=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_until(lambda: _pings(redis, port), 60, "redis-server to restart")
        _, err = process.communicate(timeout=180)
        failed = cluster.folder / "out.failed.jsonl"
        assert process.returncode == 0, (
            err + (failed.read_text() if failed.exists() else "") + _node_failures(cluster) + cluster.logs()
        )
        check_once(cluster, 60)
    finally:
        restarted.kill()
