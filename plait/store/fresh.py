"""A new database made at the newest schema in one step, without Alembic.

Replaying every migration on an empty database ends in the same schema, but each new database
paid for loading Alembic and for thirteen migrations, a fifth of a second of the first command
in a new folder (and of every test that opens a new store). So an empty database gets the
tables the models describe, plus what models cannot say: the trigger that keeps a node run's
output immutable (written by the first migration; here in the same words), the keyword index
of knowledge-base chunks and, on a PostgreSQL server with pgvector, their vector index. The
version table then names the newest migration, so every later release upgrades it with Alembic
as usual.

`tests/store/test_fresh_schema.py` makes a database both ways, on SQLite and PostgreSQL, and
compares every table, column, default, index, constraint, trigger and function: a migration
that the models do not follow (or the reverse) fails there.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from plait.store.migrations import HEAD_REVISION, VERSION_TABLE
from plait.store.models import full_metadata

IMMUTABLE_MESSAGE = "prompt_node_run.output_json is immutable once written; record a correction as an override"
"""What a write that would change a stored output is refused with (the first migration's words)."""

_SQLITE_KEYWORD_SEARCH = (
    """CREATE VIRTUAL TABLE kb_chunk_fts USING fts5(heading, text, content='kb_chunk', content_rowid='id',
    tokenize='porter unicode61')""",
    """CREATE TRIGGER trg_kb_chunk_fts_insert AFTER INSERT ON kb_chunk BEGIN
    INSERT INTO kb_chunk_fts(rowid, heading, text) VALUES (new.id, new.heading, new.text); END""",
    """CREATE TRIGGER trg_kb_chunk_fts_delete AFTER DELETE ON kb_chunk BEGIN
    INSERT INTO kb_chunk_fts(kb_chunk_fts, rowid, heading, text)
    VALUES ('delete', old.id, old.heading, old.text); END""",
)
"""Keyword search over knowledge-base chunks (the migration that added them, in its words)."""
_POSTGRESQL_KEYWORD_SEARCH = (
    """ALTER TABLE kb_chunk ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', heading || ' ' || "text")) STORED""",
    "CREATE INDEX idx_kb_chunk_tsv ON kb_chunk USING gin (tsv)",
)
"""On PostgreSQL: each chunk's `tsvector`, stored, and the GIN index over it (migration 0017)."""
_POSTGRESQL_VECTOR_SEARCH = (
    "ALTER TABLE kb_chunk ADD COLUMN embedding {schema}.vector(384)",
    "CREATE INDEX idx_kb_chunk_hnsw ON kb_chunk USING hnsw (embedding {schema}.vector_cosine_ops)",
)
"""And when the server has pgvector: each chunk's vector, with an HNSW index (migration 0017)."""
_EXTENSION_SCHEMA = (
    "SELECT quote_ident(n.nspname) FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
    "WHERE e.extname = 'vector'"
)
_SQLITE_GUARD = (
    f"""CREATE TRIGGER trg_pnr_output_immutable BEFORE UPDATE OF output_json ON prompt_node_run
    FOR EACH ROW WHEN OLD.output_json IS NOT NULL AND NEW.output_json IS NOT OLD.output_json
    BEGIN SELECT RAISE(ABORT, '{IMMUTABLE_MESSAGE}'); END""",
)
_POSTGRESQL_GUARD = (
    f"""CREATE FUNCTION plait_pnr_output_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION '{IMMUTABLE_MESSAGE}' USING ERRCODE = 'check_violation';
    END $$""",
    """CREATE TRIGGER trg_pnr_output_immutable BEFORE UPDATE OF output_json ON prompt_node_run
    FOR EACH ROW
    WHEN (OLD.output_json IS NOT NULL AND NEW.output_json::text IS DISTINCT FROM OLD.output_json::text)
    EXECUTE FUNCTION plait_pnr_output_immutable()""",
)


def is_untouched(conn: Connection) -> bool:
    """True when Plait has never migrated this database: its version table does not exist."""
    tables = (
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = :name"
        if conn.dialect.name == "sqlite"
        else "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = :name"
    )
    return int(conn.execute(text(tables), {"name": VERSION_TABLE}).scalar_one()) == 0


def create_at_head(conn: Connection) -> None:
    """The newest schema on an untouched database, inside the caller's transaction (all or
    nothing, like a migration). A table of the same name already there (another application's,
    in a shared PostgreSQL schema) fails it loudly rather than being taken over."""
    full_metadata().create_all(conn, checkfirst=False)
    sqlite = conn.dialect.name == "sqlite"
    extra = _SQLITE_GUARD + _SQLITE_KEYWORD_SEARCH if sqlite else _POSTGRESQL_GUARD + _POSTGRESQL_KEYWORD_SEARCH
    for statement in extra:
        conn.exec_driver_sql(statement)
    if not sqlite:
        _vector_search(conn)
    # Alembic's own version table, as `alembic stamp` would make it.
    conn.exec_driver_sql(
        f"CREATE TABLE {VERSION_TABLE} (version_num VARCHAR(32) NOT NULL, "
        f"CONSTRAINT {VERSION_TABLE}_pkc PRIMARY KEY (version_num))"
    )
    conn.execute(text(f"INSERT INTO {VERSION_TABLE} (version_num) VALUES (:head)"), {"head": HEAD_REVISION})


def _vector_search(conn: Connection) -> None:
    """pgvector's column and index, all or nothing, when the extension can be had (as 0017)."""
    from sqlalchemy.exc import DBAPIError

    available = "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'"
    if not conn.exec_driver_sql(available).scalar_one():
        return
    try:
        with conn.begin_nested():
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
            schema = conn.exec_driver_sql(_EXTENSION_SCHEMA).scalar_one()
            for statement in _POSTGRESQL_VECTOR_SEARCH:
                conn.exec_driver_sql(statement.format(schema=schema))
    except DBAPIError:  # not allowed to create it, or too old for HNSW: search stays exact
        return
