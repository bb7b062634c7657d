"""A throwaway store: a migrated `Store` on a database made for the block and removed after."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from plait.store import Store, database_url, redact
from plait.testing.postgres import fresh_schema, schema_url


@contextmanager
def temporary_store(postgres_url: str | None = None) -> Iterator[Store]:
    """A migrated `Store` that nothing else uses, closed and removed when the block ends.

    Without a URL it is a SQLite file in a new temporary folder (the folder is deleted after).
    With a PostgreSQL URL it is a new schema on that database (`plait.testing.postgres`),
    dropped after: the database must exist and the user may create schemas in it."""
    if postgres_url is None:
        with tempfile.TemporaryDirectory(prefix="plait-store-") as folder, Store(_sqlite(folder)) as store:
            yield store
        return
    base = database_url(postgres_url)
    if not base.startswith("postgresql"):
        raise ValueError(f"temporary_store takes a PostgreSQL URL or nothing (a SQLite file), not {redact(base)}")
    with fresh_schema(base) as schema, Store(schema_url(base, schema)) as store:
        yield store


def _sqlite(folder: str) -> str:
    return f"sqlite:///{Path(folder) / 'plait.db'}"
