"""The engine's hot statements on SQLite, run straight on a DBAPI connection.

SQLAlchemy's execution layer (pool checkout, parameter processing, result wrapping) costs
40-80 µs per statement and per transaction on top of SQLite's own ~15-25 µs, which made the
engine's per-node writes two to three times slower than the statements themselves. The hot
statements (node-run writes, starting a run, looking a graph up) are still built with Core on
the ORM tables and compiled by SQLAlchemy for the SQLite dialect, once; only their execution
skips the Connection layer, on one connection per repository kept for the store's lifetime
(guarded by a lock: the engine, the lease-renewal thread and callers' threads share it).
PostgreSQL runs them through SQLAlchemy, except the writes of a repository that asks for the
raw path (`raw_postgres`: the engine's group commit, see `pg_fastpath.py`); every path is covered
by the same tests, which run on both databases.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import namedtuple
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import TracebackType
from typing import Any

from sqlalchemy import JSON, Connection, Engine, Select
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.sql.dml import UpdateBase

from plait.store.db import writer


class Prepared:
    """A Core statement compiled once for SQLite; `args()` orders parameters for `?` placeholders."""

    def __init__(
        self, stmt: UpdateBase | Select[Any], engine: Engine, json_params: frozenset[str], dumps: Callable[[Any], str]
    ):
        compiled = stmt.compile(dialect=engine.dialect)
        self.sql = compiled.string
        self._order = tuple(getattr(compiled, "positiontup", None) or ())
        bound = compiled.construct_params(_check=False)
        self._literals = {k: v for k, v in bound.items() if k in self._order and not compiled.binds[k].required}
        """Values of the literal parameters (`status = 'running'`, `lease_owner = NULL` are bound too)."""
        self._json = tuple(i for i, k in enumerate(self._order) if k in json_params)
        self._dumps = dumps
        self._plain = not self._literals and not self._json
        """Every parameter is the caller's, none to encode: `args` is one list comprehension."""

    def args(self, params: dict[str, Any]) -> list[Any]:
        if self._plain:
            return [params[k] for k in self._order]
        values = {**self._literals, **params} if self._literals else params
        out = [values[k] for k in self._order]
        dumps = self._dumps
        for i in self._json:
            if out[i] is not None:
                out[i] = dumps(out[i])
        return out

    def execute(self, raw: sqlite3.Connection, params: dict[str, Any]) -> sqlite3.Cursor:
        try:
            return raw.execute(self.sql, self.args(params))
        except sqlite3.Error as exc:
            # Same exception types as the SQLAlchemy path (IntegrityError, OperationalError, ...).
            raise DBAPIError.instance(self.sql, params, exc, sqlite3.Error) from exc

    def rows(self, raw: sqlite3.Connection, params: dict[str, Any]) -> list[Any]:
        return self.execute(raw, params).fetchall()


class PreparedQuery(Prepared):
    """A Core SELECT compiled once for SQLite; rows have attribute access, JSON columns decoded."""

    def __init__(self, stmt: Select[Any], engine: Engine, dumps: Callable[[Any], str]):
        super().__init__(stmt, engine, frozenset(), dumps)
        columns = list(stmt.selected_columns)
        self._row = namedtuple("_Row", [c.key for c in columns])  # type: ignore[misc]
        self._decode = tuple(isinstance(c.type, JSON) for c in columns)

    def rows(self, raw: sqlite3.Connection, params: dict[str, Any]) -> list[Any]:
        return [
            self._row(*(json.loads(v) if d and v is not None else v for v, d in zip(row, self._decode, strict=True)))
            for row in self.execute(raw, params).fetchall()
        ]


class _Immediate:
    """`BEGIN IMMEDIATE` ... `COMMIT` on the kept SQLite connection, under its lock, rolled back
    on any error; the session on it inside. A class, not generator-based managers: every node's
    commit enters one, and those cost more than the `BEGIN` itself."""

    __slots__ = ("_raw", "_statements")

    def __init__(self, statements: Statements) -> None:
        self._statements = statements
        self._raw: sqlite3.Connection | None = None

    def __enter__(self) -> Session:
        statements = self._statements
        statements._lock.acquire()
        try:
            raw = statements._connection()
            _ended_on_error(raw, "BEGIN IMMEDIATE")
            self._raw = raw
            return statements._raw_session(raw)
        except BaseException:
            statements._lock.release()
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb: TracebackType | None) -> None:
        raw = self._raw
        assert raw is not None
        try:
            if kind is None:
                _ended_on_error(raw, "COMMIT")
                return
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise _as_dbapi(exc) from exc
        finally:
            self._raw = None
            self._statements._lock.release()


def _as_dbapi(error: sqlite3.Error) -> StatementError:
    """A SQLite error as SQLAlchemy raises it, so callers (retries, fault checks) see one kind on both paths."""
    return DBAPIError.instance("BEGIN IMMEDIATE / COMMIT", None, error, sqlite3.Error)


def _ended_on_error(raw: sqlite3.Connection, statement: str) -> None:
    """`statement` on `raw`; if it fails, the transaction is rolled back and the error raised as SQLAlchemy's."""
    try:
        raw.execute(statement)
    except sqlite3.Error as error:
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        raise _as_dbapi(error) from error


class Session:
    """Named statements inside one connection (and transaction, for writes), on either path."""

    def __init__(self, run: Callable[[str, dict[str, Any]], Any], rows: Callable[[str, dict[str, Any]], list[Any]]):
        self.execute = run
        """`execute(name, params)`: a cursor-like result (`rowcount`, `fetchone()`)."""
        self.rows = rows
        """`rows(name, params)`: the rows of a SELECT, with attribute access."""
        self.raw: sqlite3.Connection | None = None
        """The SQLite connection it runs on, on the raw path."""


class Statements:
    """Named Core statements, run the fastest way the database allows: prepared on the raw
    SQLite connection, through SQLAlchemy elsewhere. Build one per repository."""

    def __init__(
        self,
        engine: Engine,
        statements: dict[str, UpdateBase | Select[Any]],
        json_params: frozenset[str],
        dumps: Callable[[Any], str],
        *,
        raw_postgres: bool = False,
    ):
        """`raw_postgres`: on PostgreSQL too, write transactions skip SQLAlchemy's execution
        layer (for the hottest writes only: it keeps one connection and serializes them)."""
        self._engine = engine
        self._statements = statements
        self._lock = threading.Lock()
        self._held: Any = None
        """The pool's connection this instance keeps checked out (SQLite only, opened on first use)."""
        self._dumps = dumps
        self._json_params = json_params
        self._sqlite = engine.dialect.name == "sqlite"
        self._pg: Any = None
        """The kept PostgreSQL connection of the raw path (`pg_fastpath.PgHeld`), when asked for."""
        if raw_postgres and engine.dialect.name == "postgresql":
            from plait.store.pg_fastpath import PgHeld  # psycopg is imported only where it is used

            self._pg = PgHeld(engine)
        self._session: Session | None = None
        """The session on the kept SQLite connection (replaced when the connection is)."""
        self._prepared: dict[str, Any] = {}
        """The raw paths only: each statement compiled on its first use (a CLI command that
        reads one row must not compile the dozens a run writes with)."""

    def transaction(self) -> AbstractContextManager[Session]:
        """A write transaction (`BEGIN IMMEDIATE` on SQLite), committed on success."""
        if self._sqlite:
            return _Immediate(self)
        return self._transaction()

    @contextmanager
    def _transaction(self) -> Iterator[Session]:
        if self._pg is not None:
            with self._pg.transaction() as raw:
                yield Session(lambda name, params: self._compiled(name).execute(raw, params), _no_rows)
        else:
            with writer(self._engine).begin() as conn:
                yield self._sqlalchemy_session(conn)

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """A connection for reads (each statement sees the latest commit)."""
        if self._sqlite:
            with self._lock:
                yield self._raw_session(self._connection())
        else:
            with self._engine.connect() as conn:
                yield self._sqlalchemy_session(conn)

    def close(self) -> None:
        """Give the kept connection back to the pool (`Store.close` then closes it)."""
        with self._lock:
            held, self._held = self._held, None
            self._session = None
        if held is not None:
            held.close()
        if self._pg is not None:
            self._pg.close()

    def _connection(self) -> sqlite3.Connection:
        if self._held is None:
            self._held = self._engine.raw_connection()
        raw = self._held.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        return raw

    def _raw_session(self, raw: sqlite3.Connection) -> Session:
        """The session on the kept connection `raw`: made once, since the connection is kept."""
        session = self._session
        if session is None or session.raw is not raw:
            session = Session(
                lambda name, params: self._compiled(name).execute(raw, params),
                lambda name, params: self._compiled(name).rows(raw, params),
            )
            session.raw = raw
            self._session = session
        return session

    def _compiled(self, name: str) -> Any:
        """The statement `name` prepared for this database's raw path (`Prepared` on SQLite,
        `pg_fastpath.PgPrepared` on PostgreSQL)."""
        prepared = self._prepared.get(name)
        if prepared is None:
            stmt = self._statements[name]
            if self._pg is not None:
                from plait.store.pg_fastpath import PgPrepared

                prepared = PgPrepared(stmt, self._engine, self._json_params, self._dumps)
            elif isinstance(stmt, Select):
                prepared = PreparedQuery(stmt, self._engine, self._dumps)
            else:
                prepared = Prepared(stmt, self._engine, self._json_params, self._dumps)
            self._prepared[name] = prepared
        return prepared

    def _sqlalchemy_session(self, conn: Connection) -> Session:
        statements = self._statements
        return Session(
            lambda name, params: conn.execute(statements[name], params),
            lambda name, params: list(conn.execute(statements[name], params).all()),
        )


def _no_rows(name: str, params: dict[str, Any]) -> list[Any]:
    raise NotImplementedError(f"{name}: the raw PostgreSQL path runs writes; read rows through `reading()`")
