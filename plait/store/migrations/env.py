"""Alembic environment for the Plait store.

`Store()` passes an open connection (already inside the locking transaction, see
`plait.store.db.upgrade`) in `config.attributes["connection"]`. Run by hand, e.g.
`alembic -x db=URL ...` with `script_location = plait/store/migrations`, it opens
`-x db=URL`, else `sqlalchemy.url` from the ini file, else the URL `PLAIT_DB` names.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from plait.store.migrations import VERSION_TABLE
from plait.store.models import full_metadata

config = context.config
target_metadata = full_metadata()


def _url() -> str:
    from plait.store.url import database_url

    return database_url(
        context.get_x_argument(as_dictionary=True).get("db") or config.get_main_option("sqlalchemy.url")
    )


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, version_table=VERSION_TABLE)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    """`alembic upgrade head --sql`: print the DDL instead of running it."""
    context.configure(url=_url(), target_metadata=target_metadata, version_table=VERSION_TABLE, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Migrate the database: on the connection `Store()` passed, else on one opened from the URL."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    from plait.store.db import create_store_engine, migration_connection
    from plait.store.url import parse_url

    engine = create_store_engine(parse_url(_url()))
    try:
        with migration_connection(engine) as conn:
            _run(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
