"""`Store`: one database, its repositories, and the errors a user sees when it cannot be opened."""

from __future__ import annotations

import weakref
from types import TracebackType

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from plait.deprecation import deprecated_alias
from plait.redact import register
from plait.store.batches import BatchRepository
from plait.store.cache import CacheRepository
from plait.store.chat import ChatRepository
from plait.store.checkpoint import Checkpointer
from plait.store.db import create_store_engine, upgrade
from plait.store.decisions import DecisionRepository
from plait.store.drafts import DraftRepository
from plait.store.errors import StoreError
from plait.store.evaluations import EvaluationRepository
from plait.store.graph_admin import GraphAdmin
from plait.store.graphs import GraphRepository
from plait.store.knowledge import KnowledgeRepository
from plait.store.knowledge_index import KnowledgeIndex
from plait.store.ledger import LedgerRepository
from plait.store.memory import MemoryRepository
from plait.store.outbox import OutboxRepository
from plait.store.run_admin import RunAdmin
from plait.store.runs import RunRepository
from plait.store.schedules import ScheduleRepository
from plait.store.settings import SettingsRepository
from plait.store.settings_changes import SettingsChanges
from plait.store.skills import SkillRepository
from plait.store.templates import TemplateRepository
from plait.store.tokens import TokenRepository
from plait.store.url import database_url, parse_url, redact

SUPPORTED = ("sqlite", "postgresql")


class Store:
    """The Plait database: `Store()` opens `PLAIT_DB` or the store found from the current folder
    (`default_store`: the nearest `.plait/` folder up, else the per-user store), migrating it to
    the current schema first (safe when several processes start at once).

        with Store("sqlite:///runs.db") as store:
            stored = store.graphs.save(graph)
            run = store.runs.create(graph_id=stored.graph_id, graph_version=stored.version,
                                    schema_version=stored.schema_version, input={...})

    `migrate=False` skips the migration check (for code that knows the database is current).
    The store is safe to share between threads; each process opens its own.
    """

    db: Engine
    """The SQLAlchemy engine of the database (named apart from Plait's own `Engine`, which executes runs)."""
    graphs: GraphRepository
    graph_admin: GraphAdmin
    runs: RunRepository
    run_admin: RunAdmin
    cache: CacheRepository
    ledger: LedgerRepository
    settings: SettingsRepository
    settings_changes: SettingsChanges
    """The settings changed while the server runs (`plait.runs.settings`)."""
    tokens: TokenRepository

    def __init__(self, url: str | None = None, *, migrate: bool = True) -> None:
        self.url = database_url(url)
        parsed = parse_url(self.url)
        self.display_url = redact(parsed)
        register(parsed.password)  # a driver error quoting the URL must not store or show it
        backend = parsed.get_backend_name()
        if backend not in SUPPORTED:
            raise StoreError(
                f"cannot open the database {self.display_url}: Plait stores runs in SQLite or PostgreSQL, "
                f"not '{backend}'; pass --db sqlite:///path/plait.db or --db postgresql://user@host/dbname"
            )
        try:
            self.db = create_store_engine(parsed)
            if migrate:
                upgrade(self.db)
        except (SQLAlchemyError, OSError, ImportError) as exc:
            if getattr(self, "db", None) is not None:
                self.db.dispose()
            raise StoreError(self._open_error(exc)) from exc
        except Exception as exc:  # Alembic's CommandError: e.g. a database from a newer Plait
            self.db.dispose()
            raise StoreError(self._open_error(exc)) from exc
        self.graphs = GraphRepository(self.db)
        self.graph_admin = GraphAdmin(self.db)
        self.runs = RunRepository(self.db)
        self.run_admin = RunAdmin(self.db)
        self.cache = CacheRepository(self.db)
        self.ledger = LedgerRepository(self.db)
        self.settings = SettingsRepository(self.db)
        self.settings_changes = SettingsChanges(self.db)
        self.tokens = TokenRepository(self.db)
        self.templates = TemplateRepository(self.db)
        self.batches = BatchRepository(self.db)
        self.schedules = ScheduleRepository(self.db)
        self.outbox = OutboxRepository(self.db)
        self.decisions = DecisionRepository(self.db)
        self.drafts = DraftRepository(self.db)
        self.chat = ChatRepository(self.db)
        self.knowledge = KnowledgeRepository(self.db)
        self.knowledge_index = KnowledgeIndex(self.db)
        self.memory = MemoryRepository(self.db)
        self.evaluations = EvaluationRepository(self.db)
        self.skills = SkillRepository(self.db)
        self._checkpointer = Checkpointer(self.db) if _wal_file(self.db) else None
        if self._checkpointer is not None:  # a store dropped without close() still stops its thread
            weakref.finalize(self, self._checkpointer.close)

    @property
    def engine(self) -> Engine:
        """Deprecated name of `db` (docs/changes.md)."""
        return deprecated_alias("Store.engine", "Store.db", self.db)

    def _open_error(self, exc: BaseException) -> str:
        reason = str(exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc)
        reason = reason.strip().splitlines()[0] if reason.strip() else type(exc).__name__
        if "Can't locate revision" in reason:
            hint = "this database was migrated by a newer Plait release: upgrade Plait, or pass another one with --db"
        elif isinstance(exc, ImportError):
            hint = (
                "that driver is not installed: pass --db postgresql://... (Plait uses psycopg 3) or --db sqlite:///..."
            )
        elif self.url.startswith("sqlite"):
            hint = "check that the file's directory can be created and written, or pass another one with --db URL"
        else:
            hint = "check the URL and that the database server is running, or pass another one with --db URL"
        return f"cannot open the database {self.display_url}: {reason}; {hint} (or set PLAIT_DB)"

    def close(self) -> None:
        """Close every pooled connection (the store cannot be used afterwards)."""
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None
        self.graphs.close()
        self.cache.close()
        self.runs.close()
        self.db.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.display_url!r})"


def _wal_file(engine: Engine) -> bool:
    """A SQLite database in a file (so in WAL mode): the ones whose log needs checkpoints."""
    if engine.dialect.name != "sqlite":
        return False
    database = engine.url.database or ""
    return database not in ("", ":memory:") and "mode=memory" not in database
