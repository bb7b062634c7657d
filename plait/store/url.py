"""Which database to open, and how to name it in messages without leaking a password."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from plait.store.errors import StoreError

DEFAULT_URL = "sqlite:///./.plait/plait.db"
"""Zero set-up default: a file under the current directory."""
ENV_VAR = "PLAIT_DB"

_PG_ALIASES = ("postgresql://", "postgres://", "postgresql+psycopg3://")


def database_url(explicit: str | None = None) -> str:
    """`--db` beats `PLAIT_DB` beats the default file; a plain file path is an SQLite file; bare
    PostgreSQL URLs select psycopg 3.

    `postgresql://` would otherwise make SQLAlchemy look for psycopg2, which is not a dependency.
    """
    url = explicit or os.environ.get(ENV_VAR) or DEFAULT_URL
    url = url.strip()
    if looks_like_file(url):
        return sqlite_url(url)
    for alias in _PG_ALIASES:
        if url.startswith(alias):
            return "postgresql+psycopg://" + url[len(alias) :]
    return url


_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".db3")


def looks_like_file(url: str) -> bool:
    """A plain path, not a URL: no scheme, and a file's shape (a folder in it, an SQLite suffix) or an
    existing file. Anything else stays a (bad) URL, so a typo is refused rather than created as a file."""
    if not url or "://" in url:
        return False
    return "/" in url or os.sep in url or url.lower().endswith(_SQLITE_SUFFIXES) or Path(url).is_file()


def sqlite_url(path: str) -> str:
    """A plain file path is an SQLite file: `--db runs.db` means `sqlite:///runs.db` (`~` expanded)."""
    return "sqlite:///" + str(Path(path).expanduser())


def parse_url(url: str) -> URL:
    """`url` parsed; a StoreError that shows the accepted forms when it is not a database URL."""
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise StoreError(
            f"'{url}' is not a database URL: write sqlite:///path/to/plait.db (or a file path such as runs.db) or "
            "postgresql://user@host:5432/dbname, and pass it with --db or the PLAIT_DB environment variable"
        ) from exc


def redact(url: str | URL) -> str:
    """The URL as it can be shown in a message: password replaced by `***`."""
    try:
        parsed = url if isinstance(url, URL) else make_url(url)
    except ArgumentError:
        return "<unparseable URL>"
    return parsed.render_as_string(hide_password=True)
