"""Evaluation sets, evaluations and promotions in the store, SQLite and PostgreSQL (the `store`
fixture): a set built again under its name is the next revision with its own cases, the newest
answering by name; a result is kept once per case, side and repetition (a resumed evaluation
never scores a case twice); an evaluation records how it ended; the newest promotion is the
graph's promoted version, each one remembering the one before and whether the gate was forced."""

from __future__ import annotations

import pytest

from plait.evolve.upload import UploadMode, save_upload
from plait.store import NotFoundError, Store
from plait.store.evaluations import EvalResult, NewCase

GRAPH = {
    "id": "triage",
    "nodes": [{"id": "label", "type": "TRANSFORM", "transform_expr": "({label: input.text})"}],
    "edges": [{"source": "label", "target": "END"}],
}


def case(run: str, label: str = "corrected", expected: object = "bug") -> NewCase:
    return NewCase(
        level="node", label=label, source_run_id=run, graph_version=1, ledger_version=2,
        input={"input": {"text": "crash"}, "upstream": {}}, original={"label": "feature"},
        expected={"label": expected}, node_run_id=f"nr-{run}", node_id="label",
        schemas=[{"id": "label", "version": "1.0.0"}], judged_by="ana", judged_at=1.0, note="it crashes",
    )  # fmt: skip


@pytest.fixture
def graph_id(store: Store) -> str:
    return save_upload(store, GRAPH, mode=UploadMode.CREATE).stored.graph_id


def test_a_set_built_again_is_the_next_revision_with_its_own_cases(store: Store, graph_id: str) -> None:
    first = store.evaluations.create_set(graph_id, "fixes", [case("r1"), case("r2", "approved")],
                                         built_from={"sources": ["corrections", "approvals"]}, by="ana")  # fmt: skip
    assert (first.revision, first.cases, first.ref) == (1, 2, "fixes@1")
    cases = store.evaluations.cases(first.id)
    assert [(c.position, c.source_run_id, c.label) for c in cases] == [(1, "r1", "corrected"), (2, "r2", "approved")]
    assert cases[0].expected == {"label": "bug"}
    assert cases[0].input == {"input": {"text": "crash"}, "upstream": {}}
    assert cases[0].schemas == [{"id": "label", "version": "1.0.0"}]
    assert (cases[0].judged_by, cases[0].note, cases[0].critical) == ("ana", "it crashes", False)
    second = store.evaluations.create_set(graph_id, "fixes", [case("r3")], built_from={}, by="bo")
    assert second.revision == 2
    assert store.evaluations.get_set(graph_id, "fixes") == second
    assert store.evaluations.get_set(graph_id, "fixes", 1) == first
    assert [c.source_run_id for c in store.evaluations.cases(first.id)] == ["r1", "r2"]  # untouched
    assert [s.ref for s in store.evaluations.sets(graph_id)] == ["fixes@2", "fixes@1"]
    with pytest.raises(NotFoundError, match=r"no evaluation set 'fixes@3'"):
        store.evaluations.get_set(graph_id, "fixes", 3)
    empty = store.evaluations.create_set(graph_id, "nothing-yet", [], built_from={}, by="ana")
    assert (empty.cases, store.evaluations.cases(empty.id)) == (0, [])


def test_a_result_is_kept_once_and_an_evaluation_records_how_it_ended(store: Store, graph_id: str) -> None:
    made = store.evaluations.create_set(graph_id, "fixes", [case("r1")], built_from={}, by="ana")
    [only] = store.evaluations.cases(made.id)
    evaluation = store.evaluations.create_evaluation(made.id, graph_id, 2, baseline_version=None, repetitions=1,
                                                     rules={"max_regressions": 0}, by="ana")  # fmt: skip
    assert (evaluation.status, evaluation.verdict, evaluation.candidate_version) == ("pending", None, 2)
    result = EvalResult(evaluation.id, only.id, "candidate", 1, "run-1", {"label": "bug"}, {"passed": True}, True, None)
    assert store.evaluations.put_result(result)
    again = EvalResult(evaluation.id, only.id, "candidate", 1, "run-2", {"label": "x"}, None, False, None)
    assert not store.evaluations.put_result(again)
    assert store.evaluations.results(evaluation.id) == [result]
    store.evaluations.finish(evaluation.id, "running")
    assert store.evaluations.evaluation(evaluation.id).status == "running"
    store.evaluations.finish(evaluation.id, "completed", verdict={"status": "pass"})
    ended = store.evaluations.evaluation(evaluation.id)
    assert (ended.status, ended.verdict) == ("completed", {"status": "pass"})
    assert ended.completed_at is not None
    assert store.evaluations.evaluations(graph_id=graph_id) == [ended]


def test_the_newest_promotion_is_the_promoted_version(store: Store, graph_id: str) -> None:
    assert store.evaluations.promoted_version(graph_id) is None
    first = store.evaluations.promote(graph_id, 1, by="ana", evaluation_id="e-1")
    assert (first.version, first.previous_version, first.forced) == (1, None, False)
    forced = store.evaluations.promote(graph_id, 2, by="bo", forced=True, note="hotfix, the gate is known noisy")
    assert (forced.previous_version, forced.forced, forced.note) == (1, True, "hotfix, the gate is known noisy")
    assert store.evaluations.promoted_version(graph_id) == 2
    assert [p.version for p in store.evaluations.promotions(graph_id)] == [2, 1]
