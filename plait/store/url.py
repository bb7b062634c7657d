"""Which database to open, and how to name it in messages without leaking a password."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from plait.store.errors import StoreError

ENV_VAR = "PLAIT_DB"
HOME_VAR = "PLAIT_HOME"
"""Where the per-user store lives (default: `$XDG_DATA_HOME/plait`, else `~/.local/share/plait`)."""
FOLDER = ".plait"
FILE = "plait.db"

_PG_ALIASES = ("postgresql://", "postgres://", "postgresql+psycopg3://")


def database_url(explicit: str | None = None) -> str:
    """`--db` beats `PLAIT_DB` beats the store found from here (`default_store`); a plain file
    path is an SQLite file; bare
    PostgreSQL URLs select psycopg 3.

    `postgresql://` would otherwise make SQLAlchemy look for psycopg2, which is not a dependency.
    """
    url = explicit or os.environ.get(ENV_VAR) or sqlite_url(str(default_store()))
    url = url.strip()
    if looks_like_file(url):
        return sqlite_url(url)
    for alias in _PG_ALIASES:
        if url.startswith(alias):
            return "postgresql+psycopg://" + url[len(alias) :]
    return url


def default_store(start: Path | None = None) -> Path:
    """The store a command uses when neither `--db` nor `PLAIT_DB` names one, found the way git
    finds its repository: `.plait/plait.db` in the nearest folder, from `start` (the current
    folder) up, that has a `.plait/` folder; else the per-user store. So a graph run in one
    folder is found by a workbench started in another, and a project that wants its own store
    makes a `.plait/` folder in its root."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / FOLDER).is_dir():
            return folder / FOLDER / FILE
    return user_home() / FILE


def user_home() -> Path:
    """The folder of the per-user store: `$PLAIT_HOME`, else `$XDG_DATA_HOME/plait`, else
    `~/.local/share/plait`."""
    if os.environ.get(HOME_VAR):
        return Path(os.environ[HOME_VAR]).expanduser()
    data = os.environ.get("XDG_DATA_HOME")
    return (Path(data) if data else Path.home() / ".local" / "share") / "plait"


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
