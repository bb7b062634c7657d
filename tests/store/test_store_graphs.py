"""Graph definitions: versions on save, unchanged content reused, lookups by slug and id, listing."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import func, select
from store_helpers import graph

import plait
from plait.compile.dump import dump_yaml
from plait.model import SourceType
from plait.store import NotFoundError, Store, StoreError
from plait.store.models import GRAPH_DEF, GRAPH_DEF_VERSION

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_new_slug_is_version_one_under_a_uuid(store: Store) -> None:
    stored = store.graphs.save(graph())
    assert uuid.UUID(stored.graph_id).version == 4
    assert (stored.slug, stored.version, stored.latest_version, stored.created) == ("demo", 1, 1, True)
    assert stored.schema_version == "1.0.0"
    assert stored.source_type == "user"
    assert stored.graph.version == 1
    assert stored.graph.schema_version == "1.0.0"
    assert stored.created_at == stored.updated_at > 0


def test_saving_the_same_content_returns_the_stored_version(store: Store) -> None:
    first = store.graphs.save(graph())
    again = store.graphs.save(graph())
    assert again.created is False
    assert (again.graph_id, again.version, again.created_at) == (first.graph_id, 1, first.created_at)
    with store.db.connect() as conn:
        assert conn.execute(select(func.count()).select_from(GRAPH_DEF_VERSION)).scalar() == 1


def test_an_export_reimported_is_unchanged(store: Store, tmp_path: Path) -> None:
    """Store-managed fields (`version`, `created_at`, ...) in an exported file are not content."""
    original = plait.load_graph(EXAMPLES / "video_chapters.yaml")
    stored = store.graphs.save(original)
    exported = tmp_path / "export.yaml"
    exported.write_text(dump_yaml(stored.graph), encoding="utf-8")
    reloaded = plait.load_graph(exported)
    assert reloaded.version == 1
    again = store.graphs.save(reloaded)
    assert (again.created, again.version) == (False, 1)


def test_changed_content_stores_the_next_version_and_old_ones_stay_readable(store: Store) -> None:
    v1 = store.graphs.save(graph(description="first"))
    v2 = store.graphs.save(graph(description="second"))
    v3 = store.graphs.save(graph(description="third"))
    assert (v2.version, v3.version, v3.graph_id, v3.created) == (2, 3, v1.graph_id, True)
    assert v3.created_at == v1.created_at
    assert store.graphs.get("demo").version == 3
    old = store.graphs.get("demo", 1)
    assert (old.version, old.latest_version, old.graph.description) == (1, 3, "first")
    assert old.updated_at == v1.updated_at
    assert store.graphs.get(v1.graph_id, 2).graph.description == "second"
    # Going back to an earlier content is a new version too: versions only move forward.
    assert store.graphs.save(graph(description="first")).version == 4


def test_get_by_slug_and_by_uuid(store: Store) -> None:
    stored = store.graphs.save(graph("by_ref"))
    by_slug = store.graphs.get("by_ref")
    by_id = store.graphs.get(stored.graph_id)
    assert by_slug.graph_id == by_id.graph_id == stored.graph_id
    assert by_slug.graph == by_id.graph == stored.graph
    assert by_id.created is False


def test_missing_graph_and_version_are_clear_not_found_errors(store: Store) -> None:
    with pytest.raises(NotFoundError, match=r"no graph 'nope' in .*plait graphs list"):
        store.graphs.get("nope")
    store.graphs.save(graph())
    store.graphs.save(graph(description="v2"))
    with pytest.raises(NotFoundError, match="graph 'demo' has no version 9: its versions are 1 to 2"):
        store.graphs.get("demo", 9)
    for impossible in (0, 2**31, 2**64):  # past any column: was OverflowError (SQLite) / DataError (PostgreSQL)
        with pytest.raises(NotFoundError, match=f"has no version {impossible}"):
            store.graphs.get("demo", impossible)


def test_list_returns_the_latest_version_of_each_graph(store: Store) -> None:
    store.graphs.save(graph("b_graph"))
    store.graphs.save(graph("a_graph"))
    store.graphs.save(graph("a_graph", description="newer"))
    store.graphs.save(graph("sys_graph"), source_type="system")
    listed = store.graphs.list()
    assert [(g.slug, g.version) for g in listed] == [("a_graph", 2), ("b_graph", 1), ("sys_graph", 1)]
    assert listed[0].description == "newer"
    assert listed[0].nodes == len(graph("a_graph").nodes)
    assert listed[0].name == "Démo graph"
    assert [g.slug for g in store.graphs.list(source_type="system")] == ["sys_graph"]
    assert [g.slug for g in store.graphs.list(source_type="user")] == ["a_graph", "b_graph"]


def test_source_type_argument_overrides_the_file_and_is_checked(store: Store) -> None:
    stored = store.graphs.save(graph(), source_type="system_fork")
    assert stored.source_type == "system_fork"
    assert stored.graph.source_type == SourceType.SYSTEM_FORK
    assert store.graphs.get("demo").source_type == "system_fork"
    with pytest.raises(StoreError, match="unknown source type 'bogus': use one of system, user, system_fork"):
        store.graphs.save(graph(), source_type="bogus")


def test_explicit_schema_version_is_kept_and_carried_forward(store: Store) -> None:
    assert store.graphs.save(graph(schema_version="2.1.0")).schema_version == "2.1.0"
    later = store.graphs.save(graph(description="edited"))
    assert (later.version, later.schema_version) == (2, "2.1.0")


def test_every_example_graph_round_trips_through_the_store(store: Store) -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        original = plait.load_graph(path)
        stored = store.graphs.save(original)
        loaded = store.graphs.get(stored.graph_id).graph
        managed = {"version", "schema_version", "created_at", "updated_at"}
        assert loaded.model_dump(exclude=managed) == original.model_dump(exclude=managed), path.name


def test_unicode_content_round_trips(store: Store) -> None:
    text = 'Résumé 测试 🚀 \u2028 "quoted" \\ back'
    stored = store.graphs.save(graph(name=text, description=text))
    got = store.graphs.get(stored.graph_id).graph
    assert (got.name, got.description) == (text, text)


def test_seed_columns_mirror_the_latest_version(store: Store) -> None:
    store.graphs.save(graph(description="one"))
    store.graphs.save(graph(description="two", name="Renamed"))
    with store.db.connect() as conn:
        row = conn.execute(select(GRAPH_DEF).where(GRAPH_DEF.c.slug == "demo")).one()
    assert (row.name, row.description, row.version) == ("Renamed", "two", 2)
    assert [n["id"] for n in row.nodes_json] == ["classify", "shout"]
    assert row.schema_registry_json[0]["id"] == "label"


def test_concurrent_saves_of_one_slug_make_one_graph_and_contiguous_versions(
    store: Store, open_store: Callable[[], Store]
) -> None:
    stores = [store, *(open_store() for _ in range(3))]
    results: list[int] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(stores))

    def save(i: int) -> None:
        barrier.wait()
        try:
            for j in range(3):
                results.append(stores[i].graphs.save(graph("raced", description=f"{i}-{j}")).version)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(results) == list(range(1, 13))
    assert len(store.graphs.list()) == 1
    assert store.graphs.get("raced").version == 12


def test_latest_version_and_schema_versions_read_the_graph_row(store: Store) -> None:
    first = store.graphs.save(graph())
    bumped = graph(schemas=[{"id": "label", "version": "2.0.0", "schema": {"type": "object"}}])
    store.graphs.save(bumped)
    assert store.graphs.latest_version(first.graph_id) == 2
    assert store.graphs.schema_versions(first.graph_id) == {"label": "2.0.0"}
    with pytest.raises(NotFoundError, match="no graph with id 'nope'"):
        store.graphs.latest_version("nope")
