"""The engine's node-run writes on PostgreSQL, run straight on a psycopg connection.

A worker spends more CPU in SQLAlchemy's execution layer than in psycopg for the group
commit's statements (about 13 % of a worker's CPU against 8 %, measured with a sampling
profiler on `bench/workers.py`). As on SQLite (`fastpath.py`), the statements are still built
with Core and compiled by SQLAlchemy for the database's dialect, once; only their execution
skips the Connection layer, on one pooled connection kept for the writer's lifetime behind a
lock. psycopg prepares a statement on the server once it has run a few times. A connection
the server dropped is thrown away, whether found idle (`faults.dropped`) or by a failed
transaction, and the next transaction takes a fresh one from the pool.
Errors are SQLAlchemy's (`IntegrityError`, `OperationalError`, ...), as on the other paths.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from sqlalchemy import Engine, Select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.dml import UpdateBase

from plait.store.faults import dropped


class PgPrepared:
    """A Core statement compiled once for PostgreSQL (named `%(name)s` parameters)."""

    def __init__(
        self, stmt: UpdateBase | Select[Any], engine: Engine, json_params: frozenset[str], dumps: Callable[[Any], str]
    ):
        compiled = stmt.compile(dialect=engine.dialect)
        self.sql = compiled.string
        bound = compiled.construct_params(_check=False)
        self._literals = {k: v for k, v in bound.items() if not compiled.binds[k].required}
        """Values of the literal parameters (`status = 'running'` is bound too)."""
        self._json = tuple(k for k in compiled.binds if k in json_params)
        self._dumps = dumps

    def execute(self, raw: psycopg.Connection[Any], params: dict[str, Any]) -> psycopg.Cursor[Any]:
        values = {**self._literals, **params} if self._literals else dict(params)
        for key in self._json:
            if values.get(key) is not None:
                values[key] = self._dumps(values[key])
        try:
            return raw.execute(self.sql, values)
        except psycopg.Error as exc:
            raise DBAPIError.instance(self.sql, params, exc, psycopg.Error) from exc


class PgHeld:
    """One pooled connection kept checked out for write transactions, one at a time."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._held: Any = None

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A transaction on the kept connection, committed on success, rolled back on any error."""
        with self._lock:
            if self._held is not None and dropped(self._held.driver_connection):  # closed by the server while idle
                held, self._held = self._held, None
                held.invalidate()
            if self._held is None:
                self._held = self._engine.raw_connection()
            raw = self._held.driver_connection
            try:
                yield raw
                raw.commit()
            except BaseException as exc:
                self._end_failed(raw, exc)
                raise

    def _end_failed(self, raw: psycopg.Connection[Any], exc: BaseException) -> None:
        """Roll back; a connection that is broken (the server restarted, the network dropped)
        is given up, so that the next transaction opens a fresh one."""
        with suppress(psycopg.Error):
            raw.rollback()
        if raw.broken or raw.closed or isinstance(getattr(exc, "orig", exc), psycopg.OperationalError):
            held, self._held = self._held, None
            held.invalidate()

    def close(self) -> None:
        with self._lock:
            held, self._held = self._held, None
        if held is not None:
            held.close()
