"""Seed 000 §6 end to end: a system graph ships v1, a user forks it and runs the fork, the
system graph ships v2 with a breaking schema change and a migration, the fork sees "parent
updated", merges the changes, and the old run's outputs read back migrated while the stored
originals stay as they were. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.engine.runner import Engine
from plait.evolve.fork import ForkError, diff_fork, fork_graph, merge_from_parent, refork
from plait.evolve.migration_errors import MigrationError
from plait.evolve.reader import RunReader
from plait.evolve.system import sync_system_graphs
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.sandbox.shared import SHARED_MAX_WORKERS
from plait.store import Store, StoreError, current_activations
from plait.store.graph_admin import ReadOnlyGraph
from tests.plait_cli import run_plait

LIST_V1 = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "string"}}},
    "required": ["items"],
}
LIST_V2 = {
    "type": "object",
    "properties": {"chapters": {"type": "array", "items": {"type": "string"}}},
    "required": ["chapters"],
}
COUNT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def system_graph(version: int) -> dict[str, Any]:
    v2 = version == 2
    return {
        "plait": 1,
        "id": "plait.story",
        "name": "Story",
        "source_type": "system",
        "schemas": [
            {"id": "chapters", "version": "2.0.0" if v2 else "1.0.0", "schema": LIST_V2 if v2 else LIST_V1},
            {"id": "count", "version": "1.0.0", "schema": COUNT},
        ],
        "migrations": (
            [
                {
                    "schema_id": "chapters",
                    "from_version": "1.x.x",
                    "to_version": "2.0.0",
                    "migrate_expr": "old => ({chapters: old.items})",
                }
            ]
            if v2
            else []
        ),
        "nodes": [
            {
                "id": "split",
                "type": "TRANSFORM",
                "transform_expr": f"({{{'chapters' if v2 else 'items'}: input.text.split(' ')}})",
            },
            {
                "id": "count",
                "type": "TRANSFORM",
                "transform_expr": f"({{n: current.{'chapters' if v2 else 'items'}.length}})",
            },
        ],
        "edges": [
            {"id": "e1", "source": "split", "target": "count", "schema_id": "chapters"},
            {"id": "e2", "source": "count", "target": "END", "schema_id": "count"},
        ],
    }


def ship(folder: Path, version: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "story.yaml").write_text(yaml.safe_dump(system_graph(version), sort_keys=False))
    return folder


def execute(store: Store, ref: str, run_input: dict[str, Any]) -> str:
    run_id = start_run(store, ref, run_input)

    async def go() -> Any:
        engine = Engine(store, None)
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    assert asyncio.run(go()).status == RunStatus.COMPLETED
    return run_id


def test_the_seed_story_of_forks_and_schema_evolution(store: Store, tmp_path: Path) -> None:
    (system_v1,) = sync_system_graphs(store, ship(tmp_path / "v1", 1))
    assert (system_v1.slug, system_v1.version, system_v1.source_type) == ("plait.story", 1, "system")
    with pytest.raises(ReadOnlyGraph, match="read-only"):
        store.graphs.save(system_v1.graph.model_copy(update={"description": "mine"}), source_type="user")
    with pytest.raises(ReadOnlyGraph, match="cannot be deleted"):
        store.graph_admin.delete(system_v1.graph_id, system_v1.slug, system_v1.source_type)

    fork = fork_graph(store, "plait.story", "my_story")
    assert (fork.version, fork.source_type) == (1, "system_fork")
    assert (fork.graph.parent_def_id, fork.graph.parent_def_ver_at_fork) == (system_v1.graph_id, 1)
    old_run = execute(store, "my_story", {"text": "intro body outro"})
    stored_split = current_activations(store.runs.node_runs(old_run))["split"]
    assert stored_split.output == {
        "items": ["intro", "body", "outro"],
        "_schema_id": "chapters",
        "_schema_version": "1.0.0",
    }

    (system_v2,) = sync_system_graphs(store, ship(tmp_path / "v2", 2))
    assert system_v2.version == 2
    assert sync_system_graphs(store, ship(tmp_path / "v2", 2)) == []  # unchanged: nothing stored again

    listed = run_plait("graphs", "list", "--json", "--db", store.url, timeout=120, check=True)
    flags = {g["slug"]: g["parent_updated"] for g in json.loads(listed.stdout)}
    assert (flags["my_story"], flags["plait.story"]) == (True, False)

    diff = diff_fork(store, "my_story")
    assert diff.parent_moved
    assert (diff.base_version, diff.parent_version) == (1, 2)
    keys = {item.key: (item.parent, item.fork) for item in diff.items}
    assert keys == {
        "split": ("changed", "same"),
        "count": ("changed", "same"),
        "schema:chapters": ("changed", "same"),
        "migration:chapters@1.x.x": ("added", "same"),
    }

    # merging only the node, without the schema it now produces, would be an invalid graph
    merged = merge_from_parent(store, "my_story", ["split", "count", "schema:chapters", "migration:chapters@1.x.x"])
    assert merged.version == 2
    assert merged.graph.migrations[0].to_version == "2.0.0"
    assert merged.graph.parent_def_ver_at_fork == 1  # the fork point is kept; the merge is recorded as a version
    new_run = execute(store, "my_story", {"text": "a b"})
    assert store.runs.get(new_run).output == {"n": 2}

    reader = RunReader(store, store.runs.get(old_run))
    try:
        read = reader.output(stored_split)
    finally:
        reader.close()
    assert read == {"chapters": ["intro", "body", "outro"], "_schema_id": "chapters", "_schema_version": "2.0.0"}
    assert [(s.schema_id, s.from_version, s.to_version) for s in reader.steps[stored_split.id]] == [
        ("chapters", "1.0.0", "2.0.0")
    ]
    untouched = current_activations(store.runs.node_runs(old_run))["split"]
    assert untouched.output == stored_split.output  # the stored original is unchanged

    # what `plait runs show` presents: the old run's output migrated, the new run's as stored
    def shown_split(run_id: str) -> dict[str, Any]:
        shown = run_plait("runs", "show", run_id, "--json", "--db", store.url, timeout=120, check=True)
        return next(n for n in json.loads(shown.stdout)["nodes"] if n["node_id"] == "split")

    old_split = shown_split(old_run)
    assert old_split["effective_output"]["chapters"] == ["intro", "body", "outro"]
    assert "1.0.0" in old_split["migrated"]
    new_split = shown_split(new_run)
    assert new_split["effective_output"]["chapters"] == ["a", "b"]
    assert "migrated" not in new_split

    # every read (a GET of the run, say) migrates through one shared sandbox, never threads of its own
    before = _sandbox_threads()
    for _ in range(20):
        assert RunReader(store, store.runs.get(old_run)).output(stored_split)["chapters"] == ["intro", "body", "outro"]
    assert len(_sandbox_threads() - before) <= SHARED_MAX_WORKERS
    assert store.runs.get(old_run).graph_version == 1  # the run still pins the version it ran


def _sandbox_threads() -> set[threading.Thread]:
    return {thread for thread in threading.enumerate() if thread.name == "plait-js"}


def test_an_unchanged_system_graph_set_is_not_compiled_again_by_another_process(
    store: Store, tmp_path: Path, open_store: Any
) -> None:
    folder = ship(tmp_path / "v1", 1)
    assert len(sync_system_graphs(store, folder)) == 1
    assert sync_system_graphs(open_store(), folder) == []  # the database remembers the synced files
    assert [v.version for v in store.graph_admin.versions(store.graphs.get("plait.story").graph_id)] == [1]


def test_merge_refuses_a_field_both_sides_changed(store: Store, tmp_path: Path) -> None:
    sync_system_graphs(store, ship(tmp_path / "v1", 1))
    fork = fork_graph(store, "plait.story", "mine")
    edited = fork.graph.model_copy(deep=True)
    edited.nodes[0].transform_expr = "({items: input.text.split(',')})"  # type: ignore[union-attr]
    store.graphs.save(edited, source_type="system_fork")
    sync_system_graphs(store, ship(tmp_path / "v2", 2))
    before = store.graphs.get("mine")
    with pytest.raises(ForkError, match="conflicts") as refused:
        merge_from_parent(store, "mine", ["split"])
    assert any(line.startswith("split.transform_expr") for line in refused.value.details)
    assert store.graphs.get("mine").version == before.version  # nothing merged
    with pytest.raises(ForkError, match="nothing named nope"):
        merge_from_parent(store, "mine", ["nope"])

    reforked = refork(store, "mine")
    assert reforked.graph.parent_def_ver_at_fork == 2
    assert not diff_fork(store, "mine").items  # the fork is the parent again


def test_a_missing_migration_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    sync_system_graphs(store, ship(tmp_path / "v1", 1))
    run_id = execute(store, "plait.story", {"text": "x y"})
    v2 = system_graph(2)
    v2["migrations"] = []
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "story.yaml").write_text(yaml.safe_dump(v2, sort_keys=False))
    sync_system_graphs(store, tmp_path / "v2")
    reader = RunReader(store, store.runs.get(run_id))
    split = current_activations(store.runs.node_runs(run_id))["split"]
    try:
        with pytest.raises(MigrationError, match="chapters") as missing:
            reader.output(split)
    finally:
        reader.close()
    assert missing.value.run_id == run_id
    assert run_id in missing.value.message


def test_user_graphs_cannot_claim_to_be_system_graphs(store: Store, tmp_path: Path) -> None:
    sync_system_graphs(store, ship(tmp_path / "v1", 1))
    graph = store.graphs.get("plait.story").graph.model_copy(update={"id": "sneaky"})
    with pytest.raises(StoreError, match="reserved"):
        store.graphs.save(graph)
