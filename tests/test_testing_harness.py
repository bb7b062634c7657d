"""`plait.testing`, each helper on its own: the scripted provider built in Python answers by
rule, node and order; a temporary store is migrated and gone afterwards (SQLite and
PostgreSQL); a served app answers /api/health, asks for the token it hands out, and is gone
after the block; "skip, or fail in CI" fails under `CI` and skips without it."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from plait.llm.types import ChatRequest, ProviderError
from plait.testing import ScriptError, scripted, served_app, skip_or_fail, temporary_store, wait_until_healthy
from tests.conftest import pg_base_url, pg_unavailable


def _answers(provider: object, *calls: tuple[str, str]) -> list[str | None]:
    async def ask() -> list[str | None]:
        return [
            (await provider.complete(ChatRequest(node, [{"role": "user", "content": prompt}]))).content  # type: ignore[attr-defined]
            for node, prompt in calls
        ]

    return asyncio.run(ask())


def test_scripted_answers_by_rule_then_by_node_then_in_order() -> None:
    provider = scripted(
        {"match": "(?i)urgent", "output": {"label": "bug"}},
        nodes={"summarize": {"text": "short"}},
        in_order=[{"n": 1}, {"n": 2}],
    )
    calls = [("classify", "URGENT: it crashes"), ("summarize", "x"), ("a", "x"), ("b", "x"), ("summarize", "y")]
    assert _answers(provider, *calls) == [
        '{"label": "bug"}',
        '{"text": "short"}',
        '{"n": 1}',
        '{"n": 2}',
        '{"text": "short"}',
    ]
    with pytest.raises(ProviderError, match="no scripted response matches node 'c'"):
        _answers(provider, ("c", "x"))  # the in-order answers are used up


def test_scripted_refuses_an_invalid_rule_saying_what_is_wrong() -> None:
    with pytest.raises(ScriptError, match="give exactly one of output, text, tool_calls, error"):
        scripted({"node": "a", "output": {"x": 1}, "text": "both"})


def _tables(url: str) -> set[str]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                if url.startswith("sqlite")
                else "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
            return {str(name) for name in rows.scalars()}
    finally:
        engine.dispose()


def test_a_temporary_sqlite_store_is_migrated_and_removed_afterwards() -> None:
    with temporary_store() as store:
        path = Path(store.url.removeprefix("sqlite:///"))
        assert path.is_file()
        assert {"prompt_graph_run", "prompt_node_run", "plait_alembic_version"} <= _tables(store.url)
        assert store.graphs.list() == []
    assert not path.parent.exists()


def test_a_temporary_postgresql_store_is_a_schema_dropped_afterwards() -> None:
    reason = pg_unavailable()
    if reason is not None:
        skip_or_fail(reason, in_ci="CI must run the PostgreSQL tests: .ci/run starts the server")
    with temporary_store(pg_base_url()) as store:
        assert {"prompt_graph_run", "prompt_node_run", "plait_alembic_version"} <= _tables(store.url)
        schema = str(make_url(store.url).query["application_name"])  # the schema's name (plait.testing.postgres)
        assert schema.startswith("plait_t_")
    engine = create_engine(pg_base_url(), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            found = conn.execute(text("SELECT count(*) FROM pg_namespace WHERE nspname = :s"), {"s": schema})
            assert found.scalar_one() == 0
    finally:
        engine.dispose()


def test_a_temporary_store_refuses_a_url_that_is_not_postgresql() -> None:
    with pytest.raises(ValueError, match="PostgreSQL URL or nothing"), temporary_store("sqlite:///elsewhere.db"):
        pass


def _refused(url: str) -> bool:
    try:
        httpx.get(f"{url}/api/health", timeout=5)
    except httpx.ConnectError:
        return True
    return False


def test_a_served_app_answers_health_in_a_coroutine_and_is_gone_after_the_block() -> None:
    async def serve() -> tuple[str, str, int]:
        async with served_app() as served, served.async_client() as client:
            health = await client.get("/api/health")
            assert (await client.get("/api/runs")).status_code == 200  # no token asked for
            return served.url, served.store.url, health.status_code

    url, store_url, status = asyncio.run(serve())
    assert status == 200
    assert url.startswith("http://127.0.0.1:")
    assert _refused(url)
    assert not Path(store_url.removeprefix("sqlite:///")).parent.exists()  # its own store, removed


def test_a_served_app_with_auth_hands_out_the_token_it_asks_for() -> None:
    with temporary_store() as store:
        with served_app(store=store, require_auth=True) as served:
            assert served.token is not None
            assert httpx.get(f"{served.url}/api/runs", timeout=30).status_code == 401
            with served.client() as client:
                assert client.get("/api/runs").status_code == 200
            url = served.url
        assert _refused(url)
        [made] = store.tokens.list()
        assert made.name.startswith("plait-testing-")


def test_waiting_for_health_fails_at_once_for_a_server_that_stopped() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(AssertionError, match="stopped while starting"):
        wait_until_healthy(url, alive=lambda: False, timeout=600)
    with pytest.raises(AssertionError, match=r"did not answer within 0.2s \(last: ConnectError"):
        wait_until_healthy(url, timeout=0.2)


OUTCOMES = (pytest.fail.Exception, pytest.skip.Exception)
"""Both are caught, so that a skip where a failure is due fails this test instead of skipping it."""


def test_skip_or_fail_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    with pytest.raises(OUTCOMES) as raised:
        skip_or_fail("redis is missing", in_ci="CI starts it")
    assert raised.type is pytest.fail.Exception
    assert str(raised.value) == "redis is missing (CI starts it)"


def test_skip_or_fail_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(OUTCOMES) as raised:
        skip_or_fail("redis is missing", in_ci="CI starts it")
    assert raised.type is pytest.skip.Exception
    assert str(raised.value) == "redis is missing"
