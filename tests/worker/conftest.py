"""Fixtures of the worker tests: real Redis, a fresh PostgreSQL schema, and real `plait worker`
processes. Without Redis or PostgreSQL the tests skip and say why, except in CI (`CI` set),
where `.ci/run` starts both and their absence fails the tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from worker_helpers import REDIS, Cluster, need

from tests.conftest import pg_schema_url


@pytest.fixture
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS, socket_timeout=2).ping()
    except redis.RedisError as exc:
        need(f"Redis at {REDIS} is not answering ({exc})")
    return REDIS


@pytest.fixture
def lease_s() -> float:
    """The workers' lease: long, so that on a host whose cores are all busy a late renewal never
    hands a run to another worker where nobody died. A test that kills a worker and waits for its
    runs to be taken over picks a short one: `@pytest.mark.parametrize("lease_s", [4])`."""
    return 60


@pytest.fixture
def cluster(tmp_path: Path, pg_schema: str, redis_url: str, lease_s: float) -> Iterator[Cluster]:
    """`plait.toml` with a scripted provider and `[workers]` on Redis with a lease of `lease_s`;
    the caller writes `model.yaml`."""
    queue = f"plait-test-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "plait.toml"
    config.write_text(
        '[[providers]]\nid = "fake"\nkind = "scripted"\nfile = "model.yaml"\n'
        '[roles]\nchat = "fake/scripted"\n'
        f'[workers]\nbroker = "{redis_url}"\nqueue = "{queue}"\nlease_ttl_s = {lease_s:g}\n'
    )
    made = Cluster(tmp_path, pg_schema_url(pg_schema), redis_url, queue, config)
    try:
        yield made
    finally:
        made.stop()
