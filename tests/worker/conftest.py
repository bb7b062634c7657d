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
        made.stop()
