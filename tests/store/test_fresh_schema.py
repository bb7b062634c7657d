"""A new database is made at the newest schema in one step (the models, the output guard and the
version row), not by replaying every migration: both must give the same database, on SQLite and
on PostgreSQL, down to each column's type and default, each index and constraint, each trigger
and function. A migration the models do not follow, or a model change without its migration,
fails here."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection
from store_helpers import new_run

from plait.store import Store
from plait.store.db import create_store_engine, migration_connection, replay_migrations
from plait.store.fresh import create_at_head, is_untouched
from plait.store.migrations import HEAD_REVISION, VERSION_TABLE
from plait.store.url import parse_url
from tests.conftest import pg_schema_made, pg_schema_url


def _words(sql: str | None) -> str:
    """SQL with its spacing made uniform (the two paths indent their DDL differently)."""
    return re.sub(r"\s+", " ", sql or "").replace("( ", "(").replace(" )", ")").strip()


def _sqlite_shape(conn: Connection) -> dict[str, Any]:
    shape: dict[str, Any] = {}
    objects = conn.exec_driver_sql(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
    ).all()
    for kind, name, table, sql in objects:
        if kind == "trigger":
            shape[f"trigger {name}"] = (table, _words(sql))
        elif kind == "index":
            shape[f"index {name}"] = (table, _words(sql))
    for table in [name for kind, name, _, _ in objects if kind == "table"]:
        sql = next(s for k, n, _, s in objects if k == "table" and n == table)
        shape[f"table {table}"] = {
            # (name, type, not null, default, primary key position, hidden): order aside, as
            # migrations add columns at the end
            "columns": sorted(
                (c[1], c[2].upper(), c[3], _words(c[4]), c[5], c[6])
                for c in conn.exec_driver_sql(f"PRAGMA table_xinfo('{table}')").all()
            ),
            "foreign keys": sorted(
                tuple(row[2:]) for row in conn.exec_driver_sql(f"PRAGMA foreign_key_list('{table}')").all()
            ),
            "unique and primary keys": sorted(
                (bool(row[2]), row[3], _index_columns(conn, row[1]))
                for row in conn.exec_driver_sql(f"PRAGMA index_list('{table}')").all()
                if row[1].startswith("sqlite_autoindex_") or row[3] == "pk"
            ),
            "checks": sorted(_words(check) for check in re.findall(r"CHECK \((?:[^()]|\([^()]*\))*\)", sql)),
            "without rowid": "WITHOUT ROWID" in _words(sql).upper(),
        }
    return shape


def _index_columns(conn: Connection, index: str) -> tuple[str, ...]:
    return tuple(row[2] for row in conn.exec_driver_sql(f"PRAGMA index_info('{index}')").all())


def _pg_shape(conn: Connection) -> dict[str, Any]:
    schema = conn.exec_driver_sql("SELECT current_schema()").scalar_one()

    def rows(sql: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(str(v).replace(f"{schema}.", "") for v in row) for row in conn.exec_driver_sql(sql).all())

    return {
        "columns": rows(
            "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default "
            "FROM information_schema.columns WHERE table_schema = current_schema()"
        ),
        "indexes": rows("SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"),
        "constraints": rows(
            "SELECT c.conrelid::regclass::text, c.conname, c.contype, pg_get_constraintdef(c.oid) "
            "FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = current_schema()"
        ),
        "triggers": rows(
            "SELECT t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND NOT t.tgisinternal"
        ),
        "functions": [
            (name, _words(source))
            for name, source in rows(
                "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = current_schema()"
            )
        ],
        "sequences": rows(
            "SELECT sequence_name FROM information_schema.sequences WHERE sequence_schema = current_schema()"
        ),
    }


@contextmanager
def _empty_database(backend: str, folder: Path, name: str) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{folder / name}.db"
    else:
        with pg_schema_made() as schema:
            yield pg_schema_url(schema)


def _made(url: str, *, replay: bool) -> dict[str, Any]:
    engine = create_store_engine(parse_url(url))
    try:
        with migration_connection(engine) as conn:
            assert is_untouched(conn)
            if replay:
                replay_migrations(conn)
            else:
                create_at_head(conn)
            assert not is_untouched(conn)
            assert conn.exec_driver_sql(f"SELECT version_num FROM {VERSION_TABLE}").scalar_one() == HEAD_REVISION
            return _sqlite_shape(conn) if conn.dialect.name == "sqlite" else _pg_shape(conn)
    finally:
        engine.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_new_database_made_in_one_step_is_the_one_the_migrations_make(backend: str, tmp_path: Path) -> None:
    with _empty_database(backend, tmp_path, "replayed") as replayed, _empty_database(backend, tmp_path, "made") as made:
        by_migrations = _made(replayed, replay=True)
        in_one_step = _made(made, replay=False)
    assert by_migrations, "the schema description found nothing: the test misses its database"
    assert in_one_step == by_migrations
    # the description is fine-grained enough to see the guard and the ledger's layout
    described = repr(by_migrations)
    assert "trg_pnr_output_immutable" in described
    if backend == "sqlite":
        assert by_migrations["table prompt_field_version"]["without rowid"] is True


def test_a_store_opened_on_an_empty_database_does_not_load_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    code = f"import sys; from plait.store import Store; Store({url!r}).close(); print('alembic' in sys.modules)"
    opened = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert opened.stdout.strip() == "False"
    with Store(url) as store:
        assert store.runs.get(new_run(store).id).status.value == "pending"
