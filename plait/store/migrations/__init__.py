"""Alembic migrations of the store, shipped inside the package and run by `Store(migrate=True)`.

Every schema change ships a new file in `versions/` and moves `HEAD_REVISION` (a test checks
that it names Alembic's head), so a database made by an older release upgrades in place.
"""

from __future__ import annotations

from pathlib import Path

MIGRATIONS_DIR = Path(__file__).resolve().parent
HEAD_REVISION = "0020"
"""Lets `Store()` see "already up to date" with one query instead of loading Alembic."""
VERSION_TABLE = "plait_alembic_version"
"""Not `alembic_version`: a PostgreSQL database shared with another Alembic-managed app must not clash."""
