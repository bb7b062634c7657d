"""Faults of the database that a retry survives, told apart from errors in what is written.

A connection the server dropped (PostgreSQL restarted, `pg_terminate_backend`, a failover), a
server that is starting up, a deadlock or a serialization failure, and SQLite's write lock held
past the busy timeout are infrastructure: the same write succeeds a moment later on a fresh
connection. A constraint or a value the database refuses is not: retrying it changes nothing.
Writers retry the first kind (the engine's group commit for up to `RETRY_S`) and report the
second at once.

Connections are also checked when they leave the pool, without a round trip: an idle
PostgreSQL connection has nothing to read, so one whose socket is readable was closed by the
server (it sent its last error and hung up) and is replaced before anyone uses it.
"""

from __future__ import annotations

import select
import sqlite3
import sys
from typing import Any

from sqlalchemy.exc import DBAPIError

from plait.store.errors import StoreError

RETRY_S = 120.0
"""How long a write that failed for a fault of the database is retried before the engine stops
driving its run (left resumable, never failed): longer than a PostgreSQL restart or failover."""


class StoreUnavailable(StoreError):
    """The database did not take a write for `RETRY_S`; the run is left as it was, to resume."""

    code = "store_unavailable"


def transient(exc: BaseException) -> bool:
    """Whether `exc` is a fault of the database that the same write survives when retried."""
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        exc = exc.orig if exc.orig is not None else exc
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        return "database is locked" in text or "database is busy" in text or "database table is locked" in text
    psycopg = sys.modules.get("psycopg")  # not imported: the error cannot be one of its
    if psycopg is None or not isinstance(exc, psycopg.OperationalError):
        return False
    return not isinstance(exc, psycopg.errors.QueryCanceled)  # a statement timeout would strike again


def dropped(dbapi_connection: Any) -> bool:
    """An idle PostgreSQL connection the server has closed: its socket is readable (the server's
    last message, or the end of the stream). A select() with no wait: no round trip."""
    try:
        fileno = dbapi_connection.fileno()
    except Exception:  # closed on our side already
        return True
    try:
        readable, _, _ = select.select([fileno], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)
