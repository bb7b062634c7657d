"""Prompt-script templates in the store: create, read, update, soft delete, read-only system
templates synced from the package, and the one last used per category. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from plait.evolve.system import sync_system_templates
from plait.store import Store, StoreError
from plait.store.errors import NotFoundError

CODE = 'async function main() { return "hi" }'


def test_a_template_is_created_read_updated_and_deleted_softly(store: Store) -> None:
    created = store.templates.create("greet", name="Greet", script_code=CODE, category="chat", description="says hi")
    assert (created.source_type, created.script_language, created.deleted_at) == ("user", "js", None)
    updated = store.templates.update("greet", script_code='async function main() { return "hello" }', name="Greet 2")
    assert updated.name == "Greet 2"
    assert "hello" in updated.script_code
    assert updated.updated_at >= created.updated_at
    assert [t.id for t in store.templates.list(category="chat")] == ["greet"]
    deleted = store.templates.delete("greet")
    assert deleted.deleted_at is not None
    assert store.templates.list(category="chat") == []
    assert [t.id for t in store.templates.list(category="chat", deleted=True)] == ["greet"]
    with pytest.raises(NotFoundError, match="'greet' was deleted"):
        store.templates.get("greet")
    assert store.templates.get("greet", deleted=True).name == "Greet 2"  # a run that named it still finds it


def test_ids_are_checked_and_never_reused(store: Store) -> None:
    store.templates.create("one", name="One", script_code=CODE)
    with pytest.raises(StoreError, match="cannot be changed"):
        store.templates.update("one", source_type="system")
    with pytest.raises(StoreError, match="exists already"):
        store.templates.create("one", name="Again", script_code=CODE)
    store.templates.delete("one")
    with pytest.raises(StoreError, match="exists already"):
        store.templates.create("one", name="Again", script_code=CODE)
    with pytest.raises(StoreError, match="is not a template id"):
        store.templates.create("no spaces", name="x", script_code=CODE)


def test_system_templates_are_synced_read_only_and_copied_into_user_templates(store: Store) -> None:
    assert sync_system_templates(store) >= 2
    assert sync_system_templates(store) == 0  # unchanged files: nothing to do
    summary = store.templates.get("plait.summary")
    assert summary.source_type == "system"
    assert "async function main()" in summary.script_code
    with pytest.raises(StoreError, match="system template and read-only"):
        store.templates.update("plait.summary", name="mine")
    with pytest.raises(StoreError, match="cannot be deleted"):
        store.templates.delete("plait.summary")
    mine = store.templates.create(
        "my_summary", name="My summary", script_code=summary.script_code, based_on_template_id="plait.summary"
    )
    assert (mine.source_type, mine.based_on_template_id) == ("user", "plait.summary")


def test_the_last_used_template_is_kept_per_category(store: Store) -> None:
    store.templates.create("a", name="A", script_code=CODE, category="titles")
    store.templates.create("b", name="B", script_code=CODE, category="titles")
    store.templates.create("c", name="C", script_code=CODE, category="summaries")
    assert store.templates.last_used("titles") is None
    store.templates.used("a")
    store.templates.used("c")
    store.templates.used("b")
    assert (store.templates.last_used("titles"), store.templates.last_used("summaries")) == ("b", "c")
    store.templates.delete("b")
    assert store.templates.last_used("titles") is None  # a deleted template is not offered
