"""Running an evaluation (docs/evaluation.md, "Running an evaluation"), on SQLite and PostgreSQL:
each case's node executed again in the candidate version on the values the case recorded, scored
against the corrected or approved value, and the gate decided; breaking schema changes fall back
to a whole run or are incomparable with the reason; a case never learns its own correction; an
evaluation stopped part-way goes on without scoring or paying for anything twice."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from plait.evaluation import GateRules
from plait.model.enums import DownstreamPolicy, NodeStatus, RunStatus
from plait.runs.corrections import Corrections
from plait.runs.eval_run import (
    EvaluationReport,
    EvaluationRunError,
    Interrupted,
    evaluation_report,
    run_evaluation,
    start_evaluation,
)
from plait.runs.session import RunSession
from plait.runs.start import start_run
from plait.store import Store, current_activations
from tests.runs.eval_run_scenario import BREAKING, calls, drive, graph, judged, new_version, provider

FEW = GateRules(min_comparable=1)


def evaluate(
    store: Store, log: Path | None = None, *, drive_with: Any = None, concurrency: int = 4, **options: Any
) -> EvaluationReport:
    options.setdefault("rules", FEW)

    async def go() -> EvaluationReport:
        session = RunSession(store, provider(log))
        try:
            evaluation = start_evaluation(store, "feedback", "fixes", by="test", **options)
            drive_run = drive_with(session) if drive_with is not None else session.finish
            return await run_evaluation(store, evaluation.id, drive_run, concurrency=concurrency)
        finally:
            await session.aclose()

    return asyncio.run(go())


def outcomes(report: EvaluationReport) -> list[tuple[str, str | None]]:
    return [(c.case.label, (c.outcome or {}).get("outcome")) for c in report.cases]


def runs_of(report: EvaluationReport) -> list[str]:
    return [r.run_id for c in report.cases for r in c.candidate if r.run_id]


def test_a_candidate_that_fixes_the_corrected_cases_passes(store: Store, tmp_path: Path) -> None:
    judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    log = tmp_path / "calls.jsonl"
    report = evaluate(store, log)
    assert outcomes(report) == [("corrected", "fixed"), ("corrected", "fixed"), ("approved", "still_right")]
    assert report.evaluation.status == "completed"
    assert report.verdict is not None
    assert report.verdict["status"] == "pass"
    assert report.exit_code == 0
    assert "fixed: #1, #2" in report.verdict["lines"]
    assert calls(log) == ["label", "label", "label"]  # only the evaluated node runs: extract's values are recorded
    for run_id in runs_of(report):
        nodes = current_activations(store.runs.node_runs(run_id))
        assert nodes["extract"].status == NodeStatus.OVERRIDDEN
        assert nodes["extract"].override_by == "evaluation"
        assert nodes["label"].status == NodeStatus.COMPLETED
        assert nodes["label"].input_snapshot["rendered_user_prompt"].startswith("Label v2: ")
        run = store.runs.get(run_id)
        assert (run.purpose, run.graph_version, run.status) == ("evaluation", 2, RunStatus.COMPLETED)
    first = report.cases[0]
    assert first.baseline is not None
    assert first.baseline.run_id is None
    assert first.baseline.output == {"label": "feature"}
    assert first.candidate[0].output == {"label": "bug"}
    assert first.candidate[0].score is not None
    assert first.candidate[0].score["level"] == "node"


def test_a_candidate_that_breaks_approved_cases_fails_on_the_rules_it_breaks(store: Store) -> None:
    judged(store)
    new_version(store, graph("Label v3: {{ current.text }}"))
    report = evaluate(store)
    assert outcomes(report) == [("corrected", "still_wrong"), ("corrected", "still_wrong"), ("approved", "regressed")]
    verdict = report.verdict
    assert verdict is not None
    assert (verdict["status"], report.exit_code) == ("fail", 1)
    failed = {c["name"] for c in verdict["checks"] if c["status"] == "fail"}
    assert failed == {"regressions", "approved"}
    assert "  fail         regressions 1 > 0 allowed" in verdict["lines"]
    assert "regressed: #3" in verdict["lines"]
    assert "field `label` regressed in 1 case, fixed in 0 cases" in verdict["lines"]


def test_too_few_comparable_cases_is_inconclusive(store: Store) -> None:
    judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    report = evaluate(store, rules=GateRules())  # at least 10 comparable cases by default
    assert report.verdict is not None
    assert (report.verdict["status"], report.exit_code) == ("inconclusive", 3)


BRIEF = "Summarise briefly: {{ input.text }}"


def test_a_breaking_change_without_migration_runs_the_case_whole_and_says_why(store: Store, tmp_path: Path) -> None:
    judged(store)
    new_version(store, graph("Label v2: {{ current.summary }}", text=BREAKING, summarise=BRIEF))  # text 2.0.0
    log = tmp_path / "calls.jsonl"
    report = evaluate(store, log)
    assert [c.candidate[0].score["level"] for c in report.cases if c.candidate[0].score] == ["run", "run", "run"]
    note = report.cases[0].candidate[0].score["note"]
    assert note.startswith("evaluated at run level: the recorded value of 'extract' cannot be read at version 2")
    assert "no migration path for schema 'text'" in note
    assert calls(log).count("extract") == 3  # the whole graph ran on each case's input (no migration)
    assert outcomes(report) == [("corrected", "fixed"), ("corrected", "fixed"), ("approved", "still_right")]
    # a version whose input the cases no longer fit cannot run them whole either: incomparable, with the reason
    strict = {"type": "object", "required": ["text", "lang"], "properties": {"text": {"type": "string"},
              "lang": {"type": "string"}}}  # fmt: skip
    new_version(store, graph("Label v2: {{ current.summary }}", text=BREAKING, summarise=BRIEF, input_schema=strict))
    again = evaluate(store)
    assert outcomes(again) == [("corrected", "incomparable")] * 2 + [("approved", "incomparable")]
    reason = (again.cases[0].outcome or {})["reason"]
    assert reason.startswith("the case's run input is not valid for version 3: the run input does not match")
    assert again.verdict is not None
    assert "incomparable: #1 (" in "\n".join(again.verdict["lines"])


def test_a_migrated_upstream_value_reaches_the_node(store: Store, tmp_path: Path) -> None:
    judged(store)
    migration = {"schema_id": "text", "from_version": "1.x.x", "to_version": "2.0.0",
                 "migrate_expr": "old => ({summary: 'migrated ' + old.text})"}  # fmt: skip
    new_version(store, graph("Label v2: {{ current.summary }}", text=BREAKING, migrations=[migration]))
    log = tmp_path / "calls.jsonl"
    report = evaluate(store, log)
    assert calls(log) == ["label", "label", "label"]
    assert outcomes(report) == [("corrected", "fixed"), ("corrected", "fixed"), ("approved", "still_right")]
    nodes = current_activations(store.runs.node_runs(report.cases[0].candidate[0].run_id or ""))
    assert nodes["extract"].effective_output == {"summary": "migrated crash on save", "_schema_id": "text",
                                                 "_schema_version": "2.0.0"}  # fmt: skip
    assert nodes["label"].input_snapshot["rendered_user_prompt"] == "Label v2: migrated crash on save"
    assert nodes["label"].consumed == {"extract": 1}


def test_a_case_never_learns_its_own_correction(store: Store) -> None:
    _, runs, _ = judged(store)
    corrected = {k: current_activations(store.runs.node_runs(runs[k]))["label"].id for k in ("c1", "c2")}
    new_version(store, graph("Label v2: {{ current.text }}"))

    def pools(report: EvaluationReport) -> list[list[str]]:
        found = []
        for case in report.cases:
            nodes = current_activations(store.runs.node_runs(case.candidate[0].run_id or ""))
            found.append([e["node_run_id"] for e in nodes["label"].input_snapshot["fewshot"]])
        return found

    c1, c2 = corrected["c1"], corrected["c2"]
    assert pools(evaluate(store)) == [[c2], [c1], [c2, c1]]  # each case without its own correction
    # a time split leaves out what was corrected after the case too: c2 was corrected after c1
    assert pools(evaluate(store, time_split=True))[:2] == [[], [c1]]


def test_evaluation_runs_are_not_listed_and_never_teach(store: Store) -> None:
    _, _runs, _ = judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    report = evaluate(store)
    made = set(runs_of(report))
    assert made
    assert not made & {r.id for r in store.runs.list(evaluations=False)}
    assert made <= {r.id for r in store.runs.list()}
    # a person corrects an evaluation's answer: no ordinary run learns from it
    Corrections(store).override(sorted(made)[0], "label", {"label": "question"}, policy=DownstreamPolicy.KEEP)
    fresh = start_run(store, "feedback", {"text": "the app crash on save"})
    assert drive(store, fresh, provider()) == RunStatus.COMPLETED
    pool = current_activations(store.runs.node_runs(fresh))["label"].input_snapshot["fewshot"]
    assert {e["output"]["label"] for e in pool} == {"bug"}
    assert len(pool) == 2


def test_repetitions_are_runs_of_their_own_never_answered_from_the_cache(store: Store, tmp_path: Path) -> None:
    judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    evaluate(store)  # the same requests answered once: in the response cache now
    log = tmp_path / "calls.jsonl"
    report = evaluate(store, log, repetitions=3)
    assert calls(log) == ["label"] * 9
    assert [len({r.run_id for r in c.candidate}) for c in report.cases] == [3, 3, 3]
    assert report.verdict is not None
    assert report.verdict["cases"][0]["repetitions"] == 3
    assert "variance: sampling 0 of 3 cases with repetitions disagree (0.0%)" in report.verdict["lines"][-1]


def test_an_evaluation_stopped_part_way_goes_on_without_scoring_or_paying_twice(store: Store, tmp_path: Path) -> None:
    judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    log = tmp_path / "calls.jsonl"
    driven: list[str] = []

    def stops_at_the_second(session: RunSession) -> Any:
        async def go(run_id: str) -> Any:
            driven.append(run_id)
            if len(driven) == 2:  # created, then the process goes down before it is driven
                raise Interrupted("stopped", "go on")
            return await session.finish(run_id)

        return go

    with pytest.raises(Interrupted):
        evaluate(store, log, drive_with=stops_at_the_second, concurrency=1)
    [stopped] = store.evaluations.evaluations()
    assert stopped.status == "running"
    recorded = store.evaluations.results(stopped.id)
    assert len(recorded) == 3  # the first case: its baseline and candidate; the second case's baseline
    assert calls(log) == ["label"]
    report = evaluate(store, log, concurrency=1)  # the same evaluation, driven on
    assert report.evaluation.id == stopped.id
    assert report.evaluation.status == "completed"
    assert calls(log) == ["label"] * 3  # the first case was not asked again
    assert driven[1] in runs_of(report)  # the run created before the stop was driven, not made again
    kept = store.evaluations.results(stopped.id)
    assert len(kept) == 6
    assert [r for r in kept if r in recorded] == recorded
    assert len(store.runs.list(evaluations=True)) - len(store.runs.list(evaluations=False)) == 3
    assert [e[1] for e in evaluation_report(store, stopped.id).events()] == ["case", "case", "case", "verdict"]


def test_a_set_or_version_that_does_not_exist_is_refused(store: Store) -> None:
    judged(store)
    with pytest.raises(EvaluationRunError, match="graph 'feedback' has no version 7 to use as the candidate"):
        start_evaluation(store, "feedback", "fixes", candidate_version=7, by="test")
    with pytest.raises(Exception, match="no evaluation set 'fixes@4'"):
        start_evaluation(store, "feedback", "fixes@4", by="test")
    with pytest.raises(EvaluationRunError, match="--repeat is 0"):
        start_evaluation(store, "feedback", "fixes", repetitions=0, by="test")


def test_a_baseline_version_runs_afresh_the_same_way(store: Store, tmp_path: Path) -> None:
    judged(store)
    new_version(store, graph("Label v2: {{ current.text }}"))
    log = tmp_path / "calls.jsonl"
    report = evaluate(store, log, baseline=1)
    assert outcomes(report) == [("corrected", "fixed"), ("corrected", "fixed"), ("approved", "still_right")]
    assert calls(log) == ["label"] * 6
    for case in report.cases:
        assert case.baseline is not None
        assert case.baseline.run_id is not None
        assert store.runs.get(case.baseline.run_id).graph_version == 1
        assert case.baseline.output == {"label": "feature"}
    assert report.evaluation.baseline_version == 1


def test_only_the_evaluated_node_runs_whatever_surrounds_it(store: Store, tmp_path: Path) -> None:
    """A CONDITION before the node (its branch not recorded), a parallel branch, the other branch
    and a node after it: all are placed as the engine would decide them, and none executes."""
    from plait.evolve.upload import UploadMode, save_upload
    from plait.store.evaluations import NewCase
    from tests.runs.eval_run_scenario import LABEL, TEXT

    llm = "LLM_CALL"
    content = {
        "id": "feedback",
        "schemas": [{"id": "text", "schema": TEXT}, {"id": "label", "schema": LABEL}],
        "nodes": [
            {"id": "side", "type": llm, "user_prompt_tpl": "Side: {{ input.text }}"},
            {"id": "route", "type": "CONDITION", "condition_expr": "input.kind"},
            {"id": "extract", "type": llm, "user_prompt_tpl": "Summarise: {{ input.text }}"},
            {"id": "other", "type": llm, "user_prompt_tpl": "Other: {{ input.text }}"},
            {"id": "label", "type": llm, "user_prompt_tpl": "Label v2: {{ current.text }}"},
            {"id": "post", "type": "TRANSFORM", "transform_expr": "({label: current.label})"},
        ],
        "edges": [
            {"source": "route", "target": "extract", "condition_key": "a"},
            {"source": "route", "target": "other", "condition_key": "b"},
            {"source": "extract", "target": "label", "schema_id": "text"},
            {"source": "label", "target": "post", "schema_id": "label"},
            {"source": "post", "target": "END", "schema_id": "label"},
            {"source": "other", "target": "END", "schema_id": "text"},
            {"source": "side", "target": "END", "schema_id": "text"},
        ],
    }
    graph_id = save_upload(store, content, mode=UploadMode.CREATE).stored.graph_id
    case = NewCase(
        level="node", label="corrected", source_run_id="r-0", graph_version=1, ledger_version=2,
        input={"input": {"text": "the app crash on save", "kind": "a"},
               "upstream": {"extract": {"text": "crash on save", "_schema_id": "text", "_schema_version": "1.0.0"}}},
        original={"label": "feature"}, expected={"label": "bug"}, node_id="label",
        schemas=[{"id": "label", "version": "1.0.0"}],
    )  # fmt: skip
    store.evaluations.create_set(graph_id, "fixes", [case], built_from={}, by="ann")
    log = tmp_path / "calls.jsonl"
    report = evaluate(store, log)
    assert calls(log) == ["label"]
    assert outcomes(report) == [("corrected", "fixed")]
    run_id = report.cases[0].candidate[0].run_id or ""
    nodes = {n: (r.status, r.activation) for n, r in current_activations(store.runs.node_runs(run_id)).items()}
    assert nodes == {
        "side": (NodeStatus.STALE, 1), "route": (NodeStatus.STALE, 1), "extract": (NodeStatus.OVERRIDDEN, 1),
        "other": (NodeStatus.SKIPPED, 1), "label": (NodeStatus.COMPLETED, 1), "post": (NodeStatus.STALE, 1),
    }  # fmt: skip
    assert store.runs.get(run_id).status == RunStatus.COMPLETED


def test_a_renamed_upstream_node_runs_whole_and_a_removed_node_is_incomparable(store: Store, tmp_path: Path) -> None:
    judged(store)
    renamed = graph("Label v2: {{ current.text }}")
    renamed["nodes"][0]["id"] = "summarise"
    renamed["edges"][0]["source"] = "summarise"
    new_version(store, renamed)
    log = tmp_path / "calls.jsonl"
    report = evaluate(store, log)
    assert outcomes(report) == [("corrected", "fixed"), ("corrected", "fixed"), ("approved", "still_right")]
    score = report.cases[0].candidate[0].score
    assert score is not None
    assert score["note"] == "evaluated at run level: the case read 'extract', which version 2 does not have " \
        "(renamed or removed)"  # fmt: skip
    assert calls(log).count("summarise") == 3
    gone = graph("Label v2: {{ current.text }}")
    gone["nodes"][1]["id"] = "tag"
    gone["edges"] = [{"source": "extract", "target": "tag", "schema_id": "text"},
                     {"source": "tag", "target": "END", "schema_id": "label"}]  # fmt: skip
    new_version(store, gone)
    again = evaluate(store)
    assert [(c.outcome or {}).get("reason") for c in again.cases] == ["node 'label' is not in version 3"] * 3
