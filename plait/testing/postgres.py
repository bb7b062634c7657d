"""PostgreSQL for tests: a schema of its own on a shared database, selected with `search_path`.

A schema rather than a database: creating one needs no rights beyond the database's, costs
milliseconds, and two suites on one server never see each other's rows. Every connection to a
schema's URL also carries the schema as its `application_name`, so a test can find (and
terminate) its own connections and no one else's.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from plait.store import database_url, redact

SCHEMA_PREFIX = "plait_t_"
"""The schemas made here are named this and twelve hex digits."""


def unreachable(base_url: str) -> str | None:
    """Why the PostgreSQL server at `base_url` cannot be used, in one line naming it (password
    hidden); None when it answers."""
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(database_url(base_url))
    try:
        psycopg.connect(
            host=url.host, port=url.port or 5432, user=url.username, password=url.password,
            dbname=url.database, connect_timeout=3,
        ).close()  # fmt: skip
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"PostgreSQL at {redact(url)} is not reachable ({first})"
    return None


def schema_url(base_url: str, schema: str) -> str:
    """`base_url` with `search_path` set to `schema` on every connection, each named after it."""
    from sqlalchemy.engine import make_url

    url = make_url(database_url(base_url))
    url = url.update_query_dict({"options": f"-csearch_path={schema}", "application_name": schema})
    return url.render_as_string(hide_password=False)


def create_schema(base_url: str) -> str:
    """A new, empty schema on the database of `base_url`; its name."""
    schema = f"{SCHEMA_PREFIX}{uuid.uuid4().hex[:12]}"
    _admin(base_url, f"CREATE SCHEMA {_quoted(schema)}")
    return schema


def drop_schema(base_url: str, schema: str) -> None:
    """Drop `schema` and everything in it (nothing when it is gone already)."""
    _admin(base_url, f"DROP SCHEMA IF EXISTS {_quoted(schema)} CASCADE")


@contextmanager
def fresh_schema(base_url: str) -> Iterator[str]:
    """A new, empty schema for the block (its name), dropped after."""
    schema = create_schema(base_url)
    try:
        yield schema
    finally:
        drop_schema(base_url, schema)


def terminate_backends(base_url: str, schema: str, timeout_s: float = 20.0) -> int:
    """`pg_terminate_backend` on every connection made with `schema_url(base_url, schema)`, then
    wait until they have all exited (so each client finds its connection closed); how many."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(database_url(base_url), poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            mine = "SELECT pid FROM pg_stat_activity WHERE application_name = :name AND pid <> pg_backend_pid()"
            pids = [int(p) for p in conn.execute(text(mine), {"name": schema}).scalars()]
            for pid in pids:
                conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            alive = "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(:pids)"
            deadline = time.monotonic() + timeout_s
            while conn.execute(text(alive), {"pids": pids}).scalar_one() and time.monotonic() < deadline:
                time.sleep(0.01)
        return len(pids)
    finally:
        engine.dispose()


def _admin(base_url: str, sql: str) -> None:
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    engine = create_engine(database_url(base_url), poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(sql)
    finally:
        engine.dispose()


def _quoted(schema: str) -> str:
    return '"' + schema.replace('"', '""') + '"'
