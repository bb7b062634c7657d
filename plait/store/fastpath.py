"""The engine's per-node writes on SQLite, run straight on the DBAPI connection.

SQLAlchemy's execution layer costs 40-80 µs per statement and per transaction on top of
SQLite's own ~20 µs, which made `claim_node` + `finish_node` three times slower than the
statements themselves. These few statements are still built with Core on the ORM tables
and compiled by SQLAlchemy for the SQLite dialect, once; only their execution skips the
Connection layer. PostgreSQL, where a network round trip dominates, runs them through
SQLAlchemy as usual: both paths are covered by the same tests.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.dml import UpdateBase


class Prepared:
    """A Core statement compiled once for SQLite; `args()` orders parameters for `?` placeholders."""

    def __init__(self, stmt: UpdateBase, engine: Engine, json_params: frozenset[str], dumps: Callable[[Any], str]):
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
