"""What the worker tests share: a deployment of their own (a database, a broker, a queue and
worker processes) and waiting for a condition."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from plait.store import Store
from tests.api.api_helpers import wait_for
from tests.plait_cli import run_plait, start_plait

REDIS = "redis://127.0.0.1:6379/0"


def need(reason: str) -> None:
    """Skip, saying why; in CI (`CI` set) fail instead: there the services are part of the job."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run the worker tests: .ci/run starts Redis and PostgreSQL)")
    pytest.skip(reason)


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

    def store(self) -> Store:
        return Store(self.db)

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.folder.glob("worker*.log")))


def wait_until(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """`tests.api.api_helpers.wait_for`, with the timeout and what is awaited in line."""
    return wait_for(condition, timeout=timeout, what=what)
