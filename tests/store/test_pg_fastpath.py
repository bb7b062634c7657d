"""The group commit's raw PostgreSQL path: errors are SQLAlchemy's, and a connection the server
dropped is replaced, so one lost connection costs one transaction, not every later one."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from plait.runs.start import start_run
from plait.store import NotFoundError, Store
from plait.store.node_writes import Claim, Watch
from tests.conftest import pg_base_url, pg_schema_url

GRAPH = "id: g\nnodes:\n  - {id: a, type: TRANSFORM, transform_expr: input}\nedges: []\n"


@pytest.fixture
def pg_store(pg_schema: str) -> Store:
    return Store(pg_schema_url(pg_schema))


def test_a_connection_the_server_dropped_fails_one_transaction_and_the_next_one_works(
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
    with pytest.raises(OperationalError):
        writer.write_one([Watch(run_id)])
    claimed = writer.write_one([Claim(run_id, "a", 0, "me:1:x"), Watch(run_id)])
    assert claimed[0].node_id == "a"
    assert writer._statements._pg._held.driver_connection.info.backend_pid != backend
    pg_store.close()


def test_a_unit_naming_an_unknown_run_is_refused_in_the_store_s_words(pg_store: Store) -> None:
    with pytest.raises(NotFoundError):
        pg_store.runs.nodes.write_one([Claim("no-such-run", "a", 0, "me:1:x")])
    pg_store.close()
