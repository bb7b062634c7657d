"""Opening a store: URL resolution, clear errors, migrations (fresh, idempotent, concurrent)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from store_helpers import graph, new_run, spawn_workers

from plait.store import NotFoundError, Store, StoreError, database_url, default_store, redact
from plait.store.db import current_revision, migration_connection
from plait.store.migrations import HEAD_REVISION, MIGRATIONS_DIR, VERSION_TABLE
from plait.store.models import full_metadata

TABLES = {"prompt_graph_def", "prompt_graph_def_version", "prompt_graph_run", "prompt_node_run", VERSION_TABLE}


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


# ------------------------------------------------------------------------ URLs


def test_database_url_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PLAIT_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    assert database_url() == f"sqlite:///{os.environ['PLAIT_HOME']}/plait.db"  # no .plait/ up from here
    monkeypatch.setenv("PLAIT_DB", "sqlite:///from-env.db")
    assert database_url() == "sqlite:///from-env.db"
    assert database_url("sqlite:///explicit.db") == "sqlite:///explicit.db"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u@h:5432/db", "postgresql+psycopg://u@h:5432/db"),
        ("postgres://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
        ("  sqlite:///x.db ", "sqlite:///x.db"),
    ],
)
def test_database_url_normalises_postgresql_to_psycopg3(given: str, expected: str) -> None:
    assert database_url(given) == expected


def test_redact_hides_the_password() -> None:
    shown = redact("postgresql+psycopg://alice:s3cret@db.example:5432/plait")
    assert "s3cret" not in shown
    assert "alice" in shown
    assert "db.example" in shown


def test_the_default_store_is_in_the_nearest_plait_folder_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLAIT_DB", raising=False)
    (tmp_path / ".plait").mkdir()
    (tmp_path / "graphs").mkdir()
    monkeypatch.chdir(tmp_path / "graphs")
    with Store() as store:
        new_run(store)
    assert (tmp_path / ".plait" / "plait.db").is_file()
    assert not (tmp_path / "graphs" / ".plait").exists()


# ---------------------------------------------------------------- bad databases


@pytest.mark.parametrize(
    "url",
    [
        "this is not a url",
        "mysql://bob:hunter2@localhost/plait",
        "postgresql://bob:hunter2@127.0.0.1:1/plait",
        "postgresql+psycopg2://bob:hunter2@127.0.0.1/plait",
    ],
)
def test_a_database_that_cannot_be_opened_is_a_clear_store_error(url: str) -> None:
    with pytest.raises(StoreError) as caught:
        Store(url)
    message = str(caught.value)
    assert "hunter2" not in message
    assert "--db" in message
    if "://" in url and "not a url" not in url:
        assert "cannot open the database" in message
        assert "bob" in message  # the URL is named, without its password


def test_an_unwritable_sqlite_location_is_a_clear_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match=r"cannot open the database sqlite:///.*file/sub/plait\.db.*--db"):
        Store(f"sqlite:///{blocker}/sub/plait.db")


def test_sqlite_directory_is_created_on_first_use(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "plait.db"
    with Store(f"sqlite:///{target}") as store:
        assert store.graphs.list() == []
    assert target.is_file()


def test_in_memory_sqlite_is_one_database_for_every_thread() -> None:
    with Store("sqlite://") as store:
        run = new_run(store)
        seen: list[str] = []
        worker = threading.Thread(target=lambda: seen.append(store.runs.get(run.id).id))
        worker.start()
        worker.join()
        assert seen == [run.id]


def test_sqlite_pragmas_are_set_on_every_connection(tmp_path: Path) -> None:
    with Store(f"sqlite:///{tmp_path / 'p.db'}") as store:
        connections = [store.db.connect() for _ in range(3)]  # three different pooled connections
        try:
            for conn in connections:
                pragma = {
                    name: conn.exec_driver_sql(f"PRAGMA {name}").scalar()
                    for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
                }
                assert pragma == {"journal_mode": "wal", "synchronous": 1, "foreign_keys": 1, "busy_timeout": 5000}
        finally:
            for conn in connections:
                conn.close()


# ------------------------------------------------------------------ migrations


def test_head_revision_constant_names_alembics_head() -> None:
    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == HEAD_REVISION


def test_migrations_create_the_schema_on_a_fresh_database(store: Store) -> None:
    assert set(inspect(store.db).get_table_names()) >= TABLES
    assert current_revision(store.db) == HEAD_REVISION
    unique = inspect(store.db).get_unique_constraints("prompt_node_run")
    assert any(u["column_names"] == ["prompt_graph_run_id", "node_def_id", "activation"] for u in unique)


def test_migrations_are_idempotent(db_url: str) -> None:
    with Store(db_url) as first:
        run = new_run(first)
    with Store(db_url) as again:  # the fast "already at head" path
        assert again.runs.get(run.id).id == run.id
    with Store(db_url, migrate=False) as store, migration_connection(store.db) as conn:
        config = alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, "head")  # the full Alembic path, at head already: nothing to do
    with Store(db_url) as store:
        assert store.runs.get(run.id).input == {"text": "hello"}
        assert current_revision(store.db) == HEAD_REVISION


def test_migrations_downgrade_and_upgrade_again(db_url: str) -> None:
    with Store(db_url) as store:
        config = alembic_config()
        with migration_connection(store.db) as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "base")
        assert set(inspect(store.db).get_table_names()) <= {VERSION_TABLE}
    with Store(db_url) as store:
        assert set(inspect(store.db).get_table_names()) >= TABLES
        new_run(store)


def test_models_match_the_migrations(store: Store) -> None:
    """The tables of `plait.store.models` and the hand-written migrations describe the same schema."""
    with store.db.connect() as conn:
        # the search indexes of knowledge-base chunks are no model's (a model cannot say `USING
        # fts5`, nor a column PostgreSQL alone has): FTS5's tables, PostgreSQL's stored `tsvector`
        # and pgvector's column, and their indexes are left out
        def only_models(name: str | None, kind: str, parents: dict[str, str | None]) -> bool:
            search_only = str(name).startswith(("kb_chunk_fts", "idx_kb_chunk_tsv", "idx_kb_chunk_hnsw"))
            column = kind == "column" and parents.get("table_name") == "kb_chunk" and name in ("tsv", "embedding")
            return not (search_only or column)

        opts = {"version_table": VERSION_TABLE, "compare_type": True, "include_name": only_models}
        context = MigrationContext.configure(conn, opts=opts)
        assert compare_metadata(context, full_metadata()) == []


def test_migrate_false_leaves_a_new_database_alone(db_url: str) -> None:
    with Store(db_url, migrate=False) as store:
        assert not TABLES & set(inspect(store.db).get_table_names())


def test_a_database_from_a_newer_release_is_refused_clearly(db_url: str) -> None:
    with Store(db_url) as store, store.db.begin() as conn:
        conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = 'ffff9999'"))
    with pytest.raises(StoreError, match="newer Plait release"):
        Store(db_url)


def test_concurrent_first_start_on_one_new_database(db_url: str) -> None:
    """Several processes open the same brand-new database at the same moment: all succeed."""
    outputs = spawn_workers(*[["open", db_url] for _ in range(3)])
    assert [json.loads(line)["revision"] for line in outputs] == [HEAD_REVISION] * 3
    with Store(db_url) as store:
        assert store.graphs.save(graph()).version == 1


def test_concurrent_first_start_from_threads(db_url: str, open_store: Callable[[], Store]) -> None:
    errors: list[BaseException] = []

    def start() -> None:
        try:
            open_store()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_context_manager_closes_the_pool(db_url: str) -> None:
    with Store(db_url) as store:
        new_run(store)
    assert store.db.pool.checkedout() == 0


def test_not_found_is_both_a_store_error_and_a_key_error(store: Store) -> None:
    with pytest.raises(KeyError):
        store.runs.get("missing")
    with pytest.raises(StoreError) as caught:
        store.graphs.get("missing")
    assert isinstance(caught.value, NotFoundError)
    assert str(caught.value).startswith("no graph 'missing'")  # not wrapped in quotes like a KeyError


def test_the_store_is_found_as_git_finds_its_repository(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    project = tmp_path / "project"
    deep = project / "graphs" / "drafts"
    deep.mkdir(parents=True)
    assert default_store(deep) == Path(os.environ["PLAIT_HOME"]) / "plait.db"  # nothing up: the person's own
    (project / ".plait").mkdir()
    assert default_store(deep) == project / ".plait" / "plait.db"  # the nearest .plait/ from here up
    (deep / ".plait").mkdir()
    assert default_store(deep) == deep / ".plait" / "plait.db"
    assert default_store(project) == project / ".plait" / "plait.db"

    monkeypatch.delenv("PLAIT_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_store(tmp_path) == tmp_path / "data" / "plait" / "plait.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_store(tmp_path) == tmp_path / "home" / ".local" / "share" / "plait" / "plait.db"
