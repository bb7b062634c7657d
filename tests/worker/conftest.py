"""Fixtures of the worker tests: real Redis, a fresh PostgreSQL schema, and real `plait worker`
processes. Without Redis or PostgreSQL the tests skip and say why, except in CI (`CI` set),
where `.ci/run` starts both and their absence fails the tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from plait.store import Store
from tests.conftest import pg_schema_url

REDIS = "redis://127.0.0.1:6379/0"


def _need(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the worker tests: .ci/run starts Redis and PostgreSQL)")
    pytest.skip(reason)


@pytest.fixture
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS, socket_timeout=2).ping()
    except redis.RedisError as exc:
        _need(f"Redis at {REDIS} is not answering ({exc})")
    return REDIS


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

    def worker(self, *extra: str) -> subprocess.Popen[bytes]:
        log = (self.folder / f"worker{len(self.workers)}.log").open("w")
        process = subprocess.Popen([sys.executable, "-m", "plait", "worker", "-c", "4", *extra], cwd=self.folder,
                                   env=self.env(), stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        self.workers.append(process)
        return process

    def plait(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "plait", *args], cwd=self.folder, env=self.env(),
                              capture_output=True, text=True, timeout=timeout)  # fmt: skip

    def store(self) -> Store:
        return Store(self.db)

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.folder.glob("worker*.log")))


def wait_until(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def cluster(tmp_path: Path, pg_schema: str, redis_url: str) -> Iterator[Cluster]:
    """`plait.toml` with a scripted provider and `[workers]` on Redis (a 4 s lease, so that a
    killed worker's runs are taken over quickly); the caller writes `model.yaml`."""
    queue = f"plait-test-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "plait.toml"
    config.write_text(
        '[[providers]]\nid = "fake"\nkind = "scripted"\nfile = "model.yaml"\n'
        '[roles]\nchat = "fake/scripted"\n'
        f'[workers]\nbroker = "{redis_url}"\nqueue = "{queue}"\nlease_ttl_s = 4\n'
    )
    made = Cluster(tmp_path, pg_schema_url(pg_schema), redis_url, queue, config)
    try:
        yield made
    finally:
        for process in made.workers:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in made.workers:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        import redis

        redis.Redis.from_url(redis_url).delete(queue)
