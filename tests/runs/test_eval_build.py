"""Evaluation sets built from a graph's judged runs (SQLite and PostgreSQL): the cases a person's
overrides, reviews and rollbacks make, with their labels, inputs, expected values and ledger
versions; a review's case belongs to the node it showed; the newest judgement of a node counts
and a rollback undoes what it rolls back; an evaluation's runs are left out; a second build is
the next revision and the first stays as it was; --since, --nodes and --from filter; a case
whose expected value fails its schema is skipped with the reason; and what is refused."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pytest

from plait.model.enums import RunStatus
from plait.model.output_meta import strip_meta_deep
from plait.runs.corrections import Corrections
from plait.runs.eval_build import EvalBuildError, build_set, list_sets, set_ref, short_diff, show_set, since_time
from plait.runs.start import start_run
from plait.store import NotFoundError, Store
from plait.store.evaluations import EvalCase
from tests.engine.test_engine import graph_file
from tests.runs.eval_scenario import Judged, judged_graph, label
from tests.runs.test_check_children import BODY
from tests.runs.test_corrections import drive_with


@pytest.fixture
def judged(store: Store, tmp_path: Path) -> Judged:
    return judged_graph(store, tmp_path)


def _run_of(judged: Judged, run_id: str) -> str:
    return next(key for key, value in judged.runs.items() if value == run_id)


def _summary(judged: Judged, cases: list[EvalCase]) -> list[tuple[str, str | None, str, Any]]:
    return [(_run_of(judged, c.source_run_id), c.node_id, c.label, (c.expected or {}).get("label")) for c in cases]


def _node_run(store: Store, run_id: str, node_id: str, activation: int = 1) -> str:
    return next(r.id for r in store.runs.node_runs(run_id) if r.node_id == node_id and r.activation == activation)


def test_every_standing_judgement_is_a_case_in_the_order_it_was_made(store: Store, judged: Judged) -> None:
    made = build_set(store, "triage", name="triage", by="tester")
    assert (made.name, made.revision, made.ref, made.created_by) == ("triage", 1, "triage@1", "tester")
    cases = show_set(store, "triage", "triage").cases
    assert _summary(judged, cases) == [
        ("r1", "classify", "approved", "bug"),
        ("r2", "classify", "corrected", "bug"),  # the review's answer is a case of the node it showed
        ("r3", "classify", "corrected", "question"),  # a rerun after the override does not unsay it
        ("r4", "classify", "corrected", "bug"),  # rolled back to the first override
        ("r5", "classify", "approved", "praise"),  # the override undone: the approval in review stands
        ("r1", "finish", "corrected", "critical bug"),
    ]  # no r6 (skipped), nothing of the evaluation's run
    assert [c.position for c in cases] == list(range(1, 7))
    assert made.cases == 6
    assert made.built_from["labels"] == {"corrected": 4, "approved": 2}
    assert made.built_from["runs"] == 5
    assert (made.built_from["level"], made.built_from["sources"]) == ("node", ["corrections", "approvals"])
    judged_at = [c.judged_at or 0.0 for c in cases]
    assert judged_at == sorted(judged_at)
    assert all(c.level == "node" and c.judged_by == "ann" and c.graph_version == 1 for c in cases)
    assert all(c.schemas == [{"id": "label", "version": "1.0.0"}] for c in cases[:5])


def test_a_case_holds_what_the_node_read_what_it_made_and_what_a_person_said(store: Store, judged: Judged) -> None:
    build_set(store, "triage", name="triage", by="tester")
    cases = {(_run_of(judged, c.source_run_id), c.node_id): c for c in show_set(store, "triage", "triage").cases}
    approved = cases[("r1", "classify")]
    assert approved.input == {"input": {"text": "it crashes"}, "upstream": {}, "read": {"input": 1}}
    assert approved.original == approved.expected == label("bug")
    assert (approved.node_run_id, approved.ledger_version) == (_node_run(store, judged.runs["r1"], "classify"), 1)
    assert approved.note == "approved in review"
    in_review = cases[("r2", "classify")]
    # the expected value is the producer's: it carries the classifier's schema, not the review's
    assert (in_review.original, in_review.expected) == (label("question"), label("bug"))
    assert in_review.note == "corrected in review"
    overridden = cases[("r3", "classify")]
    assert (overridden.original, overridden.expected) == (label("praise"), label("question"))
    assert overridden.node_run_id == _node_run(store, judged.runs["r3"], "classify", activation=1)
    assert (overridden.ledger_version, overridden.note) == (2, "a question really")
    rolled_back = cases[("r4", "classify")]
    assert (rolled_back.expected, rolled_back.ledger_version) == (label("bug"), 2)
    finish = cases[("r1", "finish")]
    assert finish.input == {
        "input": {"text": "it crashes"}, "upstream": {"review": label("bug", "loose")}, "read": {"review": 1}
    }  # fmt: skip
    assert (finish.original, finish.expected) == (label("bug", "loose"), label("critical bug", "loose"))
    assert finish.schemas == [{"id": "loose", "version": "1.0.0"}]
    assert finish.note == "worse than that"
    assert short_diff(finish.original, finish.expected) == 'label: "bug" → "critical bug"'
    assert short_diff(approved.original, approved.expected) == ""


def test_a_case_whose_expected_value_fails_its_schema_is_skipped_with_the_reason(store: Store, judged: Judged) -> None:
    made = build_set(store, "triage", name="triage", by="tester")
    skipped = made.built_from["skipped"]
    assert skipped["count"] == 1
    [item] = skipped["cases"]
    assert (item["run_id"], item["node_id"], item["label"]) == (judged.runs["r6"], "classify", "corrected")
    assert item["node_run_id"] == _node_run(store, judged.runs["r6"], "classify")
    assert "the expected value does not match the schemas it names" in item["reason"]
    assert "'unsure' is not one of" in item["reason"]
    assert "(schema 'label')" in item["reason"]
    with pytest.raises(EvalBuildError) as refused:  # only that case: nothing can be built
        build_set(store, "triage", name="only", by="tester", since=item["judged_at"], nodes=["classify"])
    assert "all fail their schemas" in refused.value.message
    assert any("'unsure' is not one of" in line for line in refused.value.details)


def test_a_second_build_is_the_next_revision_and_the_first_is_unchanged(store: Store, judged: Judged) -> None:
    first = build_set(store, "triage", name="triage", by="tester")
    before = show_set(store, "triage", "triage@1").cases
    Corrections(store, by="bob").override(judged.runs["r2"], "classify", {"label": "praise"}, note="changed my mind")
    second = build_set(store, "triage", name="triage", by="tester")
    assert (second.revision, second.ref) == (2, "triage@2")
    assert show_set(store, "triage", "triage").set.id == second.id  # the newest by default
    after = show_set(store, "triage", "triage", revision=1)
    assert after.set == first
    assert [(c.id, c.expected, c.judged_by) for c in after.cases] == [(c.id, c.expected, c.judged_by) for c in before]
    newest = show_set(store, "triage", "triage@2").cases
    assert _summary(judged, newest)[-1] == ("r2", "classify", "corrected", "praise")  # judged last now
    assert newest[-1].judged_by == "bob"
    assert [s.ref for s in list_sets(store, "triage")] == ["triage@2", "triage@1"]
    graph = store.graphs.get("triage")
    store.graph_admin.delete(graph.graph_id, graph.slug, graph.source_type, force=True)
    for gone in (lambda: list_sets(store, "triage"), lambda: show_set(store, "triage", "triage")):
        with pytest.raises(NotFoundError, match="was deleted"):  # the sets go with their graph
            gone()


def test_since_nodes_and_sources_filter_the_cases(store: Store, judged: Judged) -> None:
    build_set(store, "triage", name="all", by="tester")
    cases = show_set(store, "triage", "all").cases
    r4 = next(c for c in cases if c.source_run_id == judged.runs["r4"])
    build_set(store, "triage", name="recent", by="tester", since=r4.judged_at)
    assert _summary(judged, show_set(store, "triage", "recent").cases) == [
        ("r4", "classify", "corrected", "bug"), ("r5", "classify", "approved", "praise"),
        ("r1", "finish", "corrected", "critical bug"),
    ]  # fmt: skip
    assert show_set(store, "triage", "recent").set.built_from["since"] == r4.judged_at
    build_set(store, "triage", name="finish", by="tester", nodes=["finish"])
    assert _summary(judged, show_set(store, "triage", "finish").cases) == [
        ("r1", "finish", "corrected", "critical bug")
    ]
    build_set(store, "triage", name="approvals", by="tester", sources=["approvals"])
    assert _summary(judged, show_set(store, "triage", "approvals").cases) == [
        ("r1", "classify", "approved", "bug"), ("r5", "classify", "approved", "praise"),
    ]  # fmt: skip
    build_set(store, "triage", name="corrections", by="tester", sources=["corrections"], nodes=["classify"])
    assert [c.label for c in show_set(store, "triage", "corrections").cases] == ["corrected"] * 3


def test_at_run_level_a_case_is_a_run_whose_output_a_person_judged(store: Store, judged: Judged) -> None:
    made = build_set(store, "triage", name="runs", by="tester", level="run")
    [case] = show_set(store, "triage", "runs").cases
    assert made.built_from["level"] == "run"
    assert (case.level, case.node_id, case.node_run_id, case.source_run_id) == ("run", None, None, judged.runs["r1"])
    assert case.input == {"text": "it crashes"}
    assert (case.original, case.expected, case.label) == ({"label": "bug"}, {"label": "critical bug"}, "corrected")
    assert (case.ledger_version, case.schemas) == (2, [{"id": "loose", "version": "1.0.0"}])


def test_what_cannot_be_built_is_refused_with_how_to_get_cases(store: Store, judged: Judged) -> None:
    with pytest.raises(NotFoundError):
        build_set(store, "nowhere", name="x", by="tester")
    refusals = {
        "no source": {"sources": []},
        "unknown source 'guesses'": {"sources": ["guesses"]},
        "not an evaluation set name": {"name": "Bad Name"},
        "level 'graph' is not one of node, run": {"level": "graph"},
        "graph 'triage' has no node 'nope'": {"nodes": ["nope"]},
        "graph 'triage' has no corrections or approvals since": {"since": time.time() + 3600},
    }
    for message, given in refusals.items():
        with pytest.raises(EvalBuildError) as refused:
            build_set(store, "triage", **{"name": "x", "by": "tester", **given})
        assert message in refused.value.message, given
        assert refused.value.kind == "invalid"
    assert "correct or approve some outputs first" in str(refused.value.hint)
    assert list_sets(store, "triage") == []  # nothing was written


def test_since_reads_dates_durations_and_seconds() -> None:
    now = 1_800_000_000.0
    assert since_time("7d", now) == now - 7 * 86400
    assert since_time("90m", now) == now - 5400
    assert since_time("1.5h", now) == now - 5400
    assert since_time("1700000000") == since_time(1_700_000_000) == 1_700_000_000.0
    assert since_time("2026-12-01T00:00:00+00:00") == dt.datetime(2026, 12, 1, tzinfo=dt.UTC).timestamp()
    assert since_time("2026-12-01") == dt.datetime(2026, 12, 1).timestamp()  # local time
    with pytest.raises(EvalBuildError, match="neither a date nor a duration"):
        since_time("soon")
    assert set_ref("triage@2") == ("triage", 2)
    assert set_ref("triage") == ("triage", None)
    with pytest.raises(EvalBuildError):
        set_ref("triage@0")


def test_a_correction_inside_a_map_item_is_a_case_of_the_map_node(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [{"id": "m", "type": "MAP", "items": "input.xs", "inputs": {"v": "{{ item }}"}, "body": BODY}],
        [],
        input_schema={"type": "object", "properties": {"xs": {"type": "array"}}, "required": ["xs"]},
    )
    run_id = start_run(store, graph, {"xs": ["a", "b"]})
    assert drive_with(store, run_id, None).status == RunStatus.COMPLETED
    [mapped] = [r for r in store.runs.node_runs(run_id) if r.node_id == "m"]
    child = next(c for c in store.runs.children(mapped.id) if c.child_key == 1)
    Corrections(store, by="ann").override(child.id, "inner", {"v": "B!"}, note="shout")
    build_set(store, "g", name="items", by="tester")
    [case] = show_set(store, "g", "items").cases  # the child's own node is not a case: its MAP node is
    assert (case.source_run_id, case.node_id, case.node_run_id) == (run_id, "m", mapped.id)
    assert (case.label, case.judged_by) == ("corrected", "ann")
    assert strip_meta_deep(case.original) != strip_meta_deep(case.expected)
    assert "B!" in json.dumps(case.expected)
    assert case.input["input"] == {"xs": ["a", "b"]}
