"""Lazy migrations: planning chains over wildcard versions, running them in the
real JS sandbox, validating the result, and never touching the stored original."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import pytest

from plait.evolve.migrate import (
    MigrationStep,
    migrate_output,
    migrate_value,
    plan,
    schemas_by_id,
)
from plait.evolve.migration_errors import MigrationError, MigrationFailed, MigrationMissing
from plait.model.graph import GraphDef, SchemaEntry, SchemaMigration
from plait.sandbox import JsSandbox

BOOK_V3 = SchemaEntry(
    id="book",
    version="3.1.0",
    schema={
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "chapters": {"type": "array", "items": {"type": "string"}},
            "chapter_count": {"type": "integer"},
        },
        "required": ["title", "chapters", "chapter_count"],
        "additionalProperties": False,
    },
)
NOTE = SchemaEntry(id="note", version="1.0.0", schema={"type": "object", "required": ["text"]})

TO_V2 = (
    "old => { if ('_schema_id' in old) throw new Error('meta leaked');"
    " return {title: old.title, chapters: old.items}; }"
)
TO_V3 = "old => ({...old, chapter_count: old.chapters.length})"


def mig(from_version: str, to_version: str, expr: str = "old => old", schema_id: str = "book") -> SchemaMigration:
    return SchemaMigration(schema_id=schema_id, from_version=from_version, to_version=to_version, migrate_expr=expr)


BOOK_CHAIN = [mig("2.x.x", "3.0.0", TO_V3), mig("1.x.x", "2.0.0", TO_V2)]


def book_v1(version: str = "1.4.0") -> dict[str, Any]:
    return {"title": "Plait", "items": ["intro", "graphs"], "_schema_id": "book", "_schema_version": version}


@pytest.fixture(scope="module")
def sandbox() -> Iterator[JsSandbox]:
    with JsSandbox(timeout_s=2.0, max_timeout_s=60, max_memory_mb=32, max_output_bytes=100_000) as box:
        yield box


# --- plan -------------------------------------------------------------------------------------

SPECIFIC = [
    mig("1.x.x", "2.0.0", "wild"),
    mig("1.2.x", "2.0.0", "minor"),
    mig("1.2.3", "2.0.0", "exact"),
    mig("1.x.4", "2.0.0", "patch"),
    mig("x.x.x", "2.0.0", "any"),
]


@pytest.mark.parametrize(
    ("stored", "chosen"),
    [("1.2.3", "exact"), ("1.2.4", "minor"), ("1.3.4", "patch"), ("1.0.0", "wild"), ("0.9.0", "any")],
)
def test_plan_prefers_the_most_specific_matching_pattern(stored: str, chosen: str) -> None:
    chain = plan("book", stored, "2.0.0", SPECIFIC)
    assert [m.migrate_expr for m in chain] == [chosen]


def test_plan_breaks_ties_by_declaration_order() -> None:
    chain = plan("book", "1.0.0", "2.0.0", [mig("1.x.x", "2.0.0", "first"), mig("1.x.x", "2.1.0", "second")])
    assert [m.migrate_expr for m in chain] == ["first"]


def test_plan_chains_majors_and_ignores_other_schemas() -> None:
    migrations = [mig("1.x.x", "9.0.0", schema_id="note"), *BOOK_CHAIN, mig("3.x.x", "4.0.0")]
    chain = plan("book", "1.4.0", "3.1.0", migrations)
    assert [(m.from_version, m.to_version) for m in chain] == [("1.x.x", "2.0.0"), ("2.x.x", "3.0.0")]


def test_plan_is_empty_when_the_major_matches() -> None:
    assert plan("book", "3.0.0", "3.7.2", BOOK_CHAIN) == []


def test_plan_passes_over_sideways_and_overshooting_candidates() -> None:
    migrations = [mig("1.2.x", "1.3.0", "sideways"), mig("1.2.0", "4.0.0", "past"), mig("1.x.x", "2.0.0", "up")]
    assert [m.migrate_expr for m in plan("book", "1.2.0", "2.5.0", migrations)] == ["up"]


def test_plan_gap_names_schema_versions_and_existing_migrations() -> None:
    with pytest.raises(MigrationMissing) as caught:
        plan("book", "1.4.0", "3.1.0", [mig("1.x.x", "2.0.0"), mig("3.x.x", "4.0.0")], run_id="r1", node_id="n1")
    error = caught.value
    assert isinstance(error, MigrationError)
    assert (error.schema_id, error.from_version, error.to_version) == ("book", "1.4.0", "3.1.0")
    for part in ("'book'", "1.4.0", "3.1.0", "nothing migrates 2.0.0", "1.x.x → 2.0.0, 3.x.x → 4.0.0", "run r1"):
        assert part in error.message
    assert "2.x.x" in error.hint
    assert "migrations" in error.hint


@pytest.mark.parametrize(
    ("migrations", "reason"),
    [
        ([mig("1.x.x", "1.5.0")], "1.x.x → 1.5.0 does not raise the major"),
        ([mig("1.x.x", "0.1.0")], "1.x.x → 0.1.0 does not raise the major"),
        ([mig("1.x.x", "3.0.0")], "1.x.x → 3.0.0 goes past major 2"),
        ([], "migrations of 'book': none"),
        ([mig("1.x.x", "2.0.0", schema_id="note")], "migrations of 'book': none"),
    ],
)
def test_plan_without_a_usable_migration_says_why(migrations: list[SchemaMigration], reason: str) -> None:
    with pytest.raises(
        MigrationMissing, match=r"no migration path for schema 'book' from 1\.0\.0 to 2\.0\.0"
    ) as caught:
        plan("book", "1.0.0", "2.0.0", migrations)
    assert reason in caught.value.message


def test_plan_refuses_to_go_down_from_a_newer_stored_major() -> None:
    with pytest.raises(MigrationMissing, match=r"stored output is at 4\.0\.0, newer than the registry's 3\.1\.0"):
        plan("book", "4.0.0", "3.1.0", [mig("4.x.x", "3.0.0")])


def test_plan_rejects_a_stored_version_that_is_not_semver() -> None:
    with pytest.raises(MigrationMissing, match=r"'1\.0' is not a semantic version"):
        plan("book", "1.0", "3.1.0", BOOK_CHAIN)


# --- migrate_value ----------------------------------------------------------------------------


def test_chain_is_applied_in_the_sandbox_with_the_final_meta(sandbox: JsSandbox) -> None:
    stored = book_v1()
    original = copy.deepcopy(stored)
    result = migrate_value(stored, schema=BOOK_V3, migrations=BOOK_CHAIN, sandbox=sandbox, run_id="r1", node_id="n1")
    assert result.value == {
        "title": "Plait",
        "chapters": ["intro", "graphs"],
        "chapter_count": 2,
        "_schema_id": "book",
        "_schema_version": "3.0.0",
    }
    assert [(s.from_version, s.to_version, s.pattern) for s in result.steps] == [
        ("1.4.0", "2.0.0", "1.x.x"),
        ("2.0.0", "3.0.0", "2.x.x"),
    ]
    assert result.migrated
    assert stored == original  # the stored original is untouched
    assert result.value is not stored


@pytest.mark.parametrize(
    "value",
    [
        {"title": "t", "chapters": [], "chapter_count": 0, "_schema_id": "book", "_schema_version": "3.0.0"},
        {"title": "t", "items": [], "_schema_id": "other", "_schema_version": "1.0.0"},
        {"title": "t", "items": []},
        {"title": "t", "_schema_id": "book"},
        ["not", "an", "object"],
        "text",
        None,
    ],
)
def test_values_needing_no_migration_are_returned_as_they_are(sandbox: JsSandbox, value: Any) -> None:
    exploding = [mig("x.x.x", "3.0.0", "old => { throw new Error('must not run'); }")]
    result = migrate_value(value, schema=BOOK_V3, migrations=exploding, sandbox=sandbox)
    assert result.value is value
    assert result.steps == ()
    assert not result.migrated


def test_missing_migration_names_schema_versions_run_and_node(sandbox: JsSandbox) -> None:
    with pytest.raises(MigrationMissing) as caught:
        migrate_value(book_v1(), schema=BOOK_V3, migrations=BOOK_CHAIN[:1], sandbox=sandbox, run_id="r9", node_id="n9")
    message = caught.value.message
    for part in ("'book'", "1.4.0", "3.1.0", "run r9", "node n9", "2.x.x → 3.0.0"):
        assert part in message
    assert "1.x.x" in caught.value.hint


def _failure(sandbox: JsSandbox, migrations: list[SchemaMigration], **kwargs: Any) -> MigrationFailed:
    stored = book_v1()
    original = copy.deepcopy(stored)
    with pytest.raises(MigrationFailed) as caught:
        migrate_value(
            stored, schema=BOOK_V3, migrations=migrations, sandbox=sandbox, run_id="r1", node_id="n1", **kwargs
        )
    assert stored == original
    return caught.value


def test_throwing_migration_names_the_failing_step_and_the_js_error(sandbox: JsSandbox) -> None:
    error = _failure(
        sandbox, [mig("1.x.x", "2.0.0", TO_V2), mig("2.x.x", "3.0.0", "old => { throw new Error('boom'); }")]
    )
    assert (error.schema_id, error.from_version, error.to_version) == ("book", "2.0.0", "3.0.0")
    assert (error.run_id, error.node_id) == ("r1", "n1")
    for part in ("schema 'book' from 2.0.0 to 3.0.0", "run r1", "node n1", "Error: boom"):
        assert part in error.message
    assert "Error: boom" in error.cause
    assert "from 2.x.x to 3.0.0" in error.hint


def test_looping_migration_times_out(sandbox: JsSandbox) -> None:
    error = _failure(sandbox, [mig("1.x.x", "3.0.0", "old => { while (true) {} }")], timeout_s=0.5)
    assert "timed out" in error.cause
    assert "0.5 s" in error.cause  # the per-call limit, not the sandbox's 2 s default
    assert "from 1.4.0 to 3.0.0" in error.message


def test_migration_exhausting_memory_fails(sandbox: JsSandbox) -> None:
    hog = "old => { const a = []; while (true) a.push(new Array(100000).fill(1)); }"
    # a time limit a host with busy cores cannot reach before the 32 MB one
    error = _failure(sandbox, [mig("1.x.x", "3.0.0", hog)], timeout_s=60)
    assert "ran out of memory" in error.cause


def test_a_migration_result_that_cannot_be_stored_fails_naming_the_field(sandbox: JsSandbox) -> None:
    """A lone surrogate would make every read of the run fail later (a 500 over HTTP): refused here."""
    error = _failure(sandbox, [mig("1.x.x", "3.0.0", r"old => ({...old, title: 'a\ud800'})")])
    assert "cannot store: result.title: the string holds a lone surrogate (U+D800)" in error.message
    assert (error.run_id, error.node_id) == ("r1", "n1")


@pytest.mark.parametrize(
    ("expr", "kind"),
    [("old => [old.title]", "an array"), ("old => null", "null"), ("old => old.title", "a string")],
)
def test_migration_returning_a_non_object_fails(sandbox: JsSandbox, expr: str, kind: str) -> None:
    error = _failure(sandbox, [mig("1.x.x", "3.0.0", expr)])
    assert f"it returned {kind}, not an object" in error.message


def test_result_violating_the_current_schema_fails_with_the_problems(sandbox: JsSandbox) -> None:
    error = _failure(sandbox, [mig("1.x.x", "2.0.0", TO_V2), mig("2.x.x", "3.0.0", "old => ({...old, extra: 1})")])
    assert "'chapter_count' is a required property" in error.message
    assert any("extra" in p for p in error.problems)
    assert len(error.problems) == 2
    assert "1.4.0 → 2.0.0 → 3.0.0" in error.message
    assert "'book' 3.1.0" in error.message
    assert (error.from_version, error.to_version) == ("2.0.0", "3.0.0")


# --- migrate_output ---------------------------------------------------------------------------


def test_output_is_migrated_by_its_schema_id(sandbox: JsSandbox) -> None:
    graph = GraphDef(id="g", schemas=[BOOK_V3, NOTE], migrations=BOOK_CHAIN)
    result = migrate_output(book_v1(), schemas_by_id(graph), graph.migrations, sandbox)
    assert result.value["_schema_version"] == "3.0.0"
    assert result.value["chapter_count"] == 2
    unknown = {"x": 1, "_schema_id": "gone", "_schema_version": "1.0.0"}
    assert migrate_output(unknown, schemas_by_id(graph), graph.migrations, sandbox).value is unknown


def test_merge_map_members_are_migrated_one_level(sandbox: JsSandbox) -> None:
    note = {"text": "hi", "_schema_id": "note", "_schema_version": "1.0.0"}
    merged = {"writer": book_v1(), "critic": note, "raw": "plain text", "nested": {"inner": book_v1()}}
    original = copy.deepcopy(merged)
    result = migrate_output(merged, {"book": BOOK_V3, "note": NOTE}, BOOK_CHAIN, sandbox, run_id="r1", node_id="m")
    assert merged == original
    assert result.value["writer"]["_schema_version"] == "3.0.0"
    assert result.value["writer"]["chapters"] == ["intro", "graphs"]
    assert result.value["critic"] is note
    assert result.value["raw"] == "plain text"
    assert result.value["nested"] == original["nested"]  # one level only
    assert result.steps == (
        MigrationStep("book", "1.4.0", "2.0.0", "1.x.x", member="writer"),
        MigrationStep("book", "2.0.0", "3.0.0", "2.x.x", member="writer"),
    )
    assert str(result.steps[0]) == "writer: book 1.4.0 → 2.0.0"


def test_merge_map_failure_names_the_member(sandbox: JsSandbox) -> None:
    merged = {"writer": book_v1()}
    with pytest.raises(MigrationFailed, match=r"\(run r1, node m, input from writer\)"):
        migrate_output(
            merged, {"book": BOOK_V3}, [mig("1.x.x", "3.0.0", "old => 1")], sandbox, run_id="r1", node_id="m"
        )


def test_merge_map_without_annotated_members_is_unchanged(sandbox: JsSandbox) -> None:
    merged = {"a": "text", "b": {"k": 1}}
    result = migrate_output(merged, {"book": BOOK_V3}, BOOK_CHAIN, sandbox)
    assert result.value is merged
    assert result.steps == ()


# --- readers have a bound ---------------------------------------------------------------------


class _Reader:
    """What a run's reader does: migrations in the process's shared sandbox, under its run id."""

    def __init__(self, run_id: str):
        self.run_id = run_id

    def call(self, function_expression: str, *args: Any, timeout_s: float | None = None) -> Any:
        from plait.sandbox.shared import shared_sandbox

        return shared_sandbox().call(function_expression, *args, timeout_s=timeout_s, owner=self.run_id)


def test_a_reader_waits_for_a_busy_migration_sandbox_at_most_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two slow migrations of other runs hold every place of the shared sandbox (one spins in a
    string search QuickJS cannot interrupt); a third reader gives up after `SHARED_WAIT_S`, saying
    to read again, instead of queueing behind them."""
    import threading
    import time

    from plait.sandbox import shared

    monkeypatch.setattr(shared, "SHARED_WAIT_S", 0.5)
    shared.close_shared_sandbox()
    slow = "old => { const s = 'a'.repeat(200000); return {n: s.indexOf(s.slice(100000) + 'b')}; }"
    holders = [
        threading.Thread(target=_expect_timeout, args=(_Reader(f"busy{k}"), slow))
        for k in range(shared.SHARED_MAX_WORKERS)
    ]
    try:
        for holder in holders:
            holder.start()
        deadline = time.monotonic() + 30
        while len(shared.shared_sandbox().child_pids()) < shared.SHARED_MAX_WORKERS and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # both are in their string search now
        started = time.monotonic()
        with pytest.raises(MigrationFailed, match=r"could not run: every JavaScript evaluator stayed busy") as caught:
            migrate_value(book_v1(), schema=BOOK_V3, migrations=BOOK_CHAIN, sandbox=_Reader("reader"), run_id="r3")
        waited = time.monotonic() - started
        assert "read again in a moment" in caught.value.hint
        assert waited < 0.5 + 1.5, f"the reader waited {waited:.2f} s"
    finally:
        for holder in holders:
            holder.join(timeout=60)
        shared.close_shared_sandbox()


def _expect_timeout(reader: _Reader, expression: str) -> None:
    from plait.sandbox import JsTimeoutError

    with contextlib.suppress(JsTimeoutError):
        reader.call(expression, {"title": "x"}, timeout_s=5)
