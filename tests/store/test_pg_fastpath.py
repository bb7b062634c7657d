"""The group commit's raw PostgreSQL path: errors are SQLAlchemy's, and a connection the server
dropped is replaced: found idle, before it fails anything; lost in a transaction, that one
transaction fails with an error the group commit retries, and the next one works."""

from __future__ import annotations

import select
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from plait.runs.start import start_run
from plait.store import NotFoundError, Store
from plait.store.faults import transient
from plait.store.writes import Claim, Watch
from tests.api.api_helpers import wait_for
from tests.conftest import pg_base_url, pg_schema_url

GRAPH = "id: g\nnodes:\n  - {id: a, type: TRANSFORM, transform_expr: input}\nedges: []\n"


@pytest.fixture
def pg_store(pg_schema: str) -> Store:
    return Store(pg_schema_url(pg_schema))


def test_a_connection_the_server_dropped_while_idle_is_replaced_before_it_fails_a_transaction(
    pg_store: Store, tmp_path: Path
) -> None:
    (tmp_path / "g.yaml").write_text(GRAPH)
    run_id = start_run(pg_store, str(tmp_path / "g.yaml"), {})
    writer = pg_store.runs.nodes
    assert writer.write_one([Watch(run_id)]) == [0]
    held = writer._statements._pg._held  # the connection the raw path keeps
    backend = held.driver_connection.info.backend_pid
    with create_engine(pg_base_url(), isolation_level="AUTOCOMMIT").connect() as admin:
        admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend})
    readable = lambda: select.select([held.driver_connection.fileno()], [], [], 0)[0]  # noqa: E731
    wait_for(readable, timeout=10, what="the server to hang up on the connection")
    claimed = writer.write_one([Claim(run_id, "a", 0, "me:1:x"), Watch(run_id)])  # no error: a fresh connection
    assert claimed[0].node_id == "a"
    assert writer._statements._pg._held.driver_connection.info.backend_pid != backend
    pg_store.close()


def test_a_connection_dropped_in_a_transaction_fails_it_as_a_fault_a_retry_survives(
    pg_store: Store, tmp_path: Path
) -> None:
    (tmp_path / "g.yaml").write_text(GRAPH)
    run_id = start_run(pg_store, str(tmp_path / "g.yaml"), {})
    statements = pg_store.runs.nodes._statements

    def dropped_in_the_middle() -> None:
        with statements.transaction() as session:
            session.execute("watch", {"b_run": run_id})
            raw = statements._pg._held.driver_connection
            with create_engine(pg_base_url(), isolation_level="AUTOCOMMIT").connect() as admin:
                admin.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": raw.info.backend_pid})
            wait_for(lambda: select.select([raw.fileno()], [], [], 0)[0], timeout=10, what="the server to hang up")
            session.execute("watch", {"b_run": run_id})

    with pytest.raises(OperationalError) as failed:
        dropped_in_the_middle()
    assert transient(failed.value)
    assert pg_store.runs.nodes.write_one([Watch(run_id)]) == [0]  # the retry, on a fresh connection
    pg_store.close()


def test_a_unit_naming_an_unknown_run_is_refused_in_the_store_s_words(pg_store: Store) -> None:
    with pytest.raises(NotFoundError):
        pg_store.runs.nodes.write_one([Claim("no-such-run", "a", 0, "me:1:x")])
    pg_store.close()
