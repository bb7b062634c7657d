"""What the worker tests share: a deployment of their own (a database, a broker, a queue,
worker processes and a `plait serve` handing its runs to them) and waiting for a condition."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from plait.store import Store
from plait.testing import skip_or_fail, wait_for, wait_until_healthy
from tests.api.api_helpers import free_port
from tests.plait_cli import run_plait, start_plait
from tests.worker.counting_server import openai_config

REDIS = "redis://127.0.0.1:6379/0"


def need(reason: str) -> None:
    """Skip, saying why; in CI (`CI` set) fail instead: there the services are part of the job."""
    skip_or_fail(reason, in_ci="CI must run the worker tests: .ci/run starts Redis and PostgreSQL")


@dataclass
class Cluster:
    """A database, a broker, a queue of their own, and the worker processes started on them."""

    folder: Path
    db: str
    broker: str
    queue: str
    config: Path
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        return {**os.environ, "PLAIT_DB": self.db, "PLAIT_CONFIG": str(self.config)}

    def start(self, *args: str, **streams: Any) -> Any:
        """`plait ARGS` started in this cluster's folder and environment (`start_plait`)."""
        return start_plait(*args, cwd=self.folder, env=self.env(), **streams)

    def worker(self, *extra: str) -> subprocess.Popen[bytes]:
        log = (self.folder / f"worker{len(self.workers)}.log").open("w")
        process = self.start("worker", "-c", "4", *extra, stdout=log, stderr=subprocess.STDOUT)
        self.workers.append(process)
        return process

    def plait(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return run_plait(*args, cwd=self.folder, env=self.env(), timeout=timeout)

    def model_at(self, url: str) -> None:
        """Send the chat role to the OpenAI-compatible server at `url` (a counting server), the
        `[workers]` table kept as it is."""
        workers = "[workers]" + self.config.read_text().split("[workers]")[1]
        self.config.write_text(openai_config(url, workers))

    def store(self) -> Store:
        return Store(self.db)

    @contextmanager
    def served(self, *graphs: str) -> Iterator[httpx.Client]:
        """`plait serve` on this cluster (it hands its runs to the workers), `graphs` stored; a
        client on it; stopped after."""
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = self.folder / "serve.log"
        with log.open("w") as out:
            server = self.start("serve", "--port", str(port), stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_until_healthy(url, alive=lambda: server.poll() is None, log=log)
            with httpx.Client(base_url=url, timeout=30) as client:
                for source in graphs:
                    assert client.post("/api/graphs", json={"source": source}).status_code == 201
                yield client
        finally:
            server.terminate()
            server.wait(timeout=20)

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.folder.glob("worker*.log")))

    def stop(self) -> None:
        """Stop every worker (SIGTERM, then kill after 20 s) and drop the queue."""
        for process in self.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.workers:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        import redis

        with suppress(redis.ConnectionError):  # a test's own Redis, stopped by the test: no queue left
            redis.Redis.from_url(self.broker, socket_timeout=5).delete(self.queue)


def wait_until(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """`plait.testing.wait_for`, with the timeout and what is awaited in line."""
    return wait_for(condition, timeout=timeout, what=what)
