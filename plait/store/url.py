"""Which database to open, and how to name it in messages without leaking a password."""

from __future__ import annotations

import os

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from plait.store.errors import StoreError

DEFAULT_URL = "sqlite:///./.plait/plait.db"
"""Zero set-up default (SPEC §9): a file under the current directory."""
ENV_VAR = "PLAIT_DB"

_PG_ALIASES = ("postgresql://", "postgres://", "postgresql+psycopg3://")


def database_url(explicit: str | None = None) -> str:
    """`--db` beats `PLAIT_DB` beats the default file; bare PostgreSQL URLs select psycopg 3.

    `postgresql://` would otherwise make SQLAlchemy look for psycopg2, which is not a dependency.
    """
    url = explicit or os.environ.get(ENV_VAR) or DEFAULT_URL
    url = url.strip()
    for alias in _PG_ALIASES:
        if url.startswith(alias):
            return "postgresql+psycopg://" + url[len(alias) :]
    return url


def parse_url(url: str) -> URL:
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise StoreError(
            f"'{url}' is not a database URL: write sqlite:///path/to/plait.db or "
            "postgresql://user@host:5432/dbname, and pass it with --db or the PLAIT_DB environment variable"
        ) from exc


def redact(url: str | URL) -> str:
    """The URL as it can be shown in a message: password replaced by `***`."""
    try:
        parsed = url if isinstance(url, URL) else make_url(url)
    except ArgumentError:
        return "<unparseable URL>"
    return parsed.render_as_string(hide_password=True)
