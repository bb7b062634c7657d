"""The engine's per-node writes on SQLite, run straight on the DBAPI connection.

SQLAlchemy's execution layer costs 40-80 µs per statement and per transaction on top of
SQLite's own ~20 µs, which made `claim_node` + `finish_node` three times slower than the
statements themselves. These few statements are still built with Core on the ORM tables
and compiled by SQLAlchemy for the SQLite dialect, once; only their execution skips the
Connection layer. PostgreSQL, where a network round trip dominates, runs them through
SQLAlchemy as usual: both paths are covered by the same tests. The same holds for the few
per-run statements (start a run, begin it, look its graph up) that bulk starts of runs repeat.
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import JSON, Connection, Engine, Select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.dml import UpdateBase

from plait.store.db import writer


class Prepared:
    """A Core statement compiled once for SQLite; `args()` orders parameters for `?` placeholders."""

    def __init__(
        self, stmt: UpdateBase | Select[Any], engine: Engine, json_params: frozenset[str], dumps: Callable[[Any], str]
    ):
        compiled = stmt.compile(dialect=engine.dialect)
        self.sql = compiled.string
        self._compiled = compiled
        self._order = tuple(getattr(compiled, "positiontup", None) or ())
        self._json = json_params
        self._dumps = dumps

    def args(self, params: dict[str, Any]) -> tuple[Any, ...]:
        values = self._compiled.construct_params(params)
        return tuple(
            self._dumps(values[k]) if k in self._json and values[k] is not None else values[k] for k in self._order
        )

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


@contextmanager
def pooled(engine: Engine) -> Iterator[sqlite3.Connection]:
    """A pooled SQLite connection, outside any transaction (each statement is its own)."""
    connection = engine.raw_connection()
    try:
        raw = connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        yield raw
    finally:
        connection.close()


@contextmanager
def immediate(engine: Engine) -> Iterator[sqlite3.Connection]:
    """A pooled SQLite connection inside `BEGIN IMMEDIATE`, committed on success."""
    pooled = engine.raw_connection()
    try:
        raw = pooled.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        try:
            raw.execute("BEGIN IMMEDIATE")
            yield raw
            raw.execute("COMMIT")
        except sqlite3.Error as exc:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise DBAPIError.instance("BEGIN IMMEDIATE / COMMIT", None, exc, sqlite3.Error) from exc
        except BaseException:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise
    finally:
        pooled.close()


class Session:
    """Named statements inside one connection (and transaction, for writes), on either path."""

    def __init__(self, run: Callable[[str, dict[str, Any]], Any], rows: Callable[[str, dict[str, Any]], list[Any]]):
        self.execute = run
        """`execute(name, params)`: a cursor-like result (`rowcount`, `fetchone()`)."""
        self.rows = rows
        """`rows(name, params)`: the rows of a SELECT, with attribute access."""


class Statements:
    """Named Core statements, run the fastest way the database allows: prepared on the raw
    SQLite connection, through SQLAlchemy elsewhere. Build one per repository, at start."""

    def __init__(
        self,
        engine: Engine,
        statements: dict[str, UpdateBase | Select[Any]],
        json_params: frozenset[str],
        dumps: Callable[[Any], str],
    ):
        self._engine = engine
        self._statements = statements
        self._prepared: dict[str, Prepared] | None = None
        if engine.dialect.name == "sqlite":
            self._prepared = {
                name: PreparedQuery(stmt, engine, dumps)
                if isinstance(stmt, Select)
                else Prepared(stmt, engine, json_params, dumps)
                for name, stmt in statements.items()
            }

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A write transaction (`BEGIN IMMEDIATE` on SQLite), committed on success."""
        if self._prepared is not None:
            with immediate(self._engine) as raw:
                yield self._raw_session(raw)
        else:
            with writer(self._engine).begin() as conn:
                yield self._sqlalchemy_session(conn)

    @contextmanager
    def reading(self) -> Iterator[Session]:
        """A connection for reads (each statement sees the latest commit)."""
        if self._prepared is not None:
            with pooled(self._engine) as raw:
                yield self._raw_session(raw)
        else:
            with self._engine.connect() as conn:
                yield self._sqlalchemy_session(conn)

    def _raw_session(self, raw: sqlite3.Connection) -> Session:
        prepared = self._prepared
        assert prepared is not None
        return Session(
            lambda name, params: prepared[name].execute(raw, params),
            lambda name, params: prepared[name].rows(raw, params),
        )

    def _sqlalchemy_session(self, conn: Connection) -> Session:
        statements = self._statements
        return Session(
            lambda name, params: conn.execute(statements[name], params),
            lambda name, params: list(conn.execute(statements[name], params).all()),
        )
