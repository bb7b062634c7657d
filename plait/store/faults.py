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

from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from plait.store.errors import StoreError
from plait.store.url import redact

RETRY_S = 120.0
"""How long a write that failed for a fault of the database is retried before the engine stops
driving its run (left resumable, never failed): longer than a PostgreSQL restart or failover."""


class StoreUnavailable(StoreError):
    """The database did not take a write for `RETRY_S`; the run is left as it was, to resume."""

    code = "store_unavailable"
    when = "when the database answers again"
    """When to resume the run, in a message: what has to change first."""


class StoreFull(StoreUnavailable):
    """The database refused a write because its disk (or its size limit) is full. Not retried:
    only a person freeing space changes that; the run stops as it was, nothing of the write kept."""

    code = "store_full"
    when = "once space is freed on the database's disk"


def full(exc: BaseException) -> bool:
    """Whether `exc` is the database out of space: SQLite's SQLITE_FULL, PostgreSQL's disk_full."""
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    if isinstance(orig, sqlite3.OperationalError):
        return "database or disk is full" in str(orig).lower()
    return getattr(orig, "sqlstate", None) == "53100"


def store_full(url: str | URL, exc: BaseException) -> StoreFull:
    """The error that says the database at `url` (shown with its password masked) is full, and
    what to do about it."""
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    return StoreFull(
        f"the database {redact(url)} is full ({str(orig).strip()}): nothing of this write was kept; free space "
        "on the disk that holds it, or move the database to a larger disk"
    )


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
