"""Opening a database: engine options, SQLite pragmas and transaction modes, and migrations.

SQLite notes. The `sqlite3` module's own transaction handling is switched off
(`isolation_level=None`) and the `begin` event issues the `BEGIN` itself, so that writers can
use `BEGIN IMMEDIATE`: a deferred transaction that reads before it writes can fail at once
with `SQLITE_BUSY` (no busy wait) when another process committed in between; an immediate one
takes the write lock up front and simply waits up to `busy_timeout`. Readers keep plain
`BEGIN`, so in WAL mode they never block anyone.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DisconnectionError, OperationalError, ProgrammingError
from sqlalchemy.pool import StaticPool

from plait.store.faults import dropped
from plait.store.fresh import create_at_head, is_untouched
from plait.store.migrations import HEAD_REVISION, MIGRATIONS_DIR, VERSION_TABLE

SQLITE_PRAGMAS = (
    # busy_timeout first: the journal_mode switch itself may have to wait for another process.
    "PRAGMA busy_timeout=5000",
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
    # A store's own thread checkpoints the log (`checkpoint.py`); this is only the safety net for
    # when it falls behind. At SQLite's default of 1,000 pages a busy engine's commits crossed it
    # between two of the thread's rounds and checkpointed inline, fsync included: a commit's mean
    # cost rose by half (W1 of bench/engine_vs_langgraph.py).
    "PRAGMA wal_autocheckpoint=10000",
)
MIGRATION_BUSY_TIMEOUT_MS = 120_000
"""A process that starts while another one migrates waits for it instead of failing after 5 s."""
PG_MIGRATION_LOCK = 0x706C616974  # "plait": one advisory lock per database, held for the migration
_BEGIN_OPTION = "plait_sqlite_begin"
POOL: dict[str, Any] = {"pool_size": 40, "max_overflow": 10}
"""Connections kept open: as many as `plait serve` has threads for its routes (AnyIO's 40).
With 10, a server busier than 10 concurrent requests closed every connection past the tenth
when it was returned and opened a new one for the next request: on PostgreSQL a new backend
process per run under load (bench/http_load.py: 211 sessions for 200 runs; 44 with 40). The
pool opens connections only when they are needed, so a CLI process still opens one or two."""


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""Compact and readable: non-ASCII text is stored as is, not as \\u escapes. One encoder for
every value: `json.dumps` with options builds a new one per call."""


def json_dumps(value: Any) -> str:
    """The one JSON encoding of every value the store writes: compact, non-ASCII text kept as is."""
    return _ENCODER.encode(value)


class Encoded(str):
    """A value its writer encoded already (`encoded`): the node writes store it as it is, so the
    engine, which measures what it stores, encodes each value once."""

    __slots__ = ()


def encoded(value: Any) -> Encoded:
    """`value` as the store's JSON (`json_dumps`), marked as encoded."""
    return Encoded(_ENCODER.encode(value))


def json_dumps_once(value: Any) -> str:
    """`json_dumps`, except that a value `encoded` already is written as it is."""
    return value if type(value) is Encoded else _ENCODER.encode(value)


_V4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_V4_SET = (4 << 76) | (0x8000 << 48)


def new_id() -> str:
    """`str(uuid.uuid4())`, without building the `UUID` object: a node run's id, one per claim in
    every node's commit (the random bits, then the version and variant set as
    `uuid.UUID(..., version=4)` sets them)."""
    h = ((int.from_bytes(os.urandom(16), "big") & _V4_CLEAR) | _V4_SET).to_bytes(16, "big").hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_sqlite(engine: Engine | Connection) -> bool:
    """True on SQLite, whose locking and fast path differ from PostgreSQL's."""
    return engine.dialect.name == "sqlite"


def conflict_insert(engine: Engine) -> Any:
    """The engine's dialect's `insert()`, which has `on_conflict_do_nothing/do_update`. Imported
    here, not at the top: a SQLite store's commands must not pay for loading the PostgreSQL dialect."""
    if is_sqlite(engine):
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    return pg_insert


def create_store_engine(url: URL) -> Engine:
    """An engine for `url`; for a SQLite file, its directory is created first."""
    if url.get_backend_name() != "sqlite":
        engine = create_engine(url, json_serializer=json_dumps, **POOL)
        event.listen(engine, "checkout", _alive)
        return engine
    database = url.database or ""
    memory = database in ("", ":memory:") or "mode=memory" in database
    if memory:
        # One shared connection, or every pooled connection would see its own empty database.
        engine = create_engine(
            url, json_serializer=json_dumps, poolclass=StaticPool, connect_args={"check_same_thread": False}
        )
    else:
        if not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, json_serializer=json_dumps, **POOL)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        for pragma in SQLITE_PRAGMAS:
            if pragma.startswith("PRAGMA journal_mode"):
                _enable_wal(dbapi_connection)
            else:
                dbapi_connection.execute(pragma)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # Straight to the driver: this runs once per transaction, on the engine's hot path.
        raw = conn.connection.driver_connection
        assert raw is not None
        raw.execute("BEGIN IMMEDIATE" if conn.get_execution_options().get(_BEGIN_OPTION) else "BEGIN")

    return engine


def _alive(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """A pooled PostgreSQL connection the server closed while it was idle is replaced at checkout
    (the pool opens a fresh one) instead of failing the statement it was taken for."""
    if dropped(dbapi_connection):
        raise DisconnectionError("the database server closed this pooled connection while it was idle")


def _enable_wal(raw: sqlite3.Connection, timeout_s: float = 5.0) -> None:
    """Switch the file to WAL (a persistent property of the file: usually already done).

    Switching needs an exclusive lock, and SQLite reports "database is locked" at once, without
    waiting `busy_timeout`, when processes opening a brand-new file at the same moment collide
    on it; so retry for a while, as the busy timeout would.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if raw.execute("PRAGMA journal_mode").fetchone()[0] in ("wal", "memory"):
                return
            raw.execute("PRAGMA journal_mode=WAL").fetchone()
            return  # a file system without WAL support keeps its mode: still usable, just slower
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def writer(engine: Engine) -> Engine:
    """The engine to write through: same pool, `BEGIN IMMEDIATE` on SQLite."""
    return engine.execution_options(**{_BEGIN_OPTION: "IMMEDIATE"}) if is_sqlite(engine) else engine


def current_revision(engine: Engine) -> str | None:
    """The migration the database is at, or None for a database Plait has never touched."""
    with engine.connect() as conn:
        try:
            return conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
        except (OperationalError, ProgrammingError):
            return None


@contextmanager
def _sqlite_busy_timeout(conn: Connection, ms: int) -> Iterator[None]:
    raw = conn.connection.driver_connection
    assert raw is not None
    raw.execute(f"PRAGMA busy_timeout={ms}")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA busy_timeout={SQLITE_PRAGMAS[0].rsplit('=', 1)[1]}")


@contextmanager
def migration_connection(engine: Engine) -> Iterator[Connection]:
    """A connection inside a transaction that holds the database-wide migration lock.

    `BEGIN IMMEDIATE` on SQLite (with a long busy timeout), an advisory lock on PostgreSQL;
    DDL is transactional on both, so a migration is all or nothing and a second process
    waits for the first, then finds the database at head.
    """
    with writer(engine).connect() as conn:
        guard = _sqlite_busy_timeout(conn, MIGRATION_BUSY_TIMEOUT_MS) if is_sqlite(conn) else nullcontext()
        with guard, conn.begin():
            if not is_sqlite(conn):
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_MIGRATION_LOCK})
            yield conn


def upgrade(engine: Engine) -> None:
    """`alembic upgrade head`, safe when several processes start on the same new database.

    A database already at head is detected with one query, and an untouched one is made at head
    in one step (`fresh.py`), both without importing Alembic.
    """
    if current_revision(engine) == HEAD_REVISION:
        return
    with migration_connection(engine) as conn:
        if is_untouched(conn):
            create_at_head(conn)
            return
        replay_migrations(conn)


def replay_migrations(conn: Connection) -> None:
    """Alembic's `upgrade head` on `conn` (inside the caller's migration transaction): every
    migration the database has not had yet, in order."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = conn
    command.upgrade(config, "head")
