"""Promotion on SQLite and PostgreSQL (the `store` fixture): without one the newest version runs;
a version is promoted only through a passing verdict of the named set (the newest completed
evaluation of that version on it), or forced with a note, which is recorded; once promoted, it is
what a run, a batch, a schedule firing and a SUBGRAPH without a pin run, while an explicit
version or pin still wins."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from plait.engine.run_input import StartError, stored_graph
from plait.engine.runner import Engine, RunOutcome
from plait.evolve.system import sync_system_graphs
from plait.model.enums import RunStatus
from plait.runs.batch import BatchFiles
from plait.runs.promote import GateRefused, PromotionError, promote, promotions
from plait.runs.schedules import Scheduler, add_schedule
from plait.runs.start import resolve_graph, start_run
from plait.store import Store
from tests.engine.test_engine import execute, graph_file
from tests.runs.promote_scenario import eval_set, evaluated, three_versions
from tests.runs.test_batch import execute as execute_batch
from tests.runs.test_batch import write_records


def label_of(store: Store, ref: str, version: int | None = None) -> tuple[int, str]:
    """(version, output label) of a run of `ref` started and executed now."""
    run_id = start_run(store, ref, {}, version=version)

    async def go() -> RunOutcome:
        engine = Engine(store, None)
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    outcome = asyncio.run(go())
    assert outcome.status == RunStatus.COMPLETED, outcome
    return store.runs.get(run_id).graph_version, str(outcome.output["label"])


def test_without_a_promotion_the_newest_version_runs(store: Store) -> None:
    graph_id = three_versions(store)
    assert store.evaluations.promoted_version(graph_id) is None
    assert stored_graph(store, "labels").version == 3
    assert label_of(store, "labels") == (3, "three")
    assert label_of(store, "labels", version=1) == (1, "one")
    shown = promotions(store, "labels")
    assert (shown.promoted_version, shown.history, shown.latest_version) == (None, [], 3)


def test_a_passing_verdict_promotes_and_the_promoted_version_runs_by_default(store: Store, tmp_path: Path) -> None:
    graph_id = three_versions(store)
    fixes = eval_set(store, graph_id)
    passed = evaluated(store, fixes, 2, "pass")
    made = promote(store, "labels", 2, gate="fixes", force=False, note=None, by="ana")
    assert (made.version, made.previous_version, made.evaluation_id, made.forced) == (2, None, passed.id, False)
    assert store.evaluations.promoted_version(graph_id) == 2
    # every default resolution follows it: a run, the HTTP API's (files=False), a dry run's lookup
    assert label_of(store, "labels") == (2, "two")
    assert resolve_graph(store, graph_id, files=False).version == 2
    assert store.graphs.get_default("labels").version == 2
    assert store.graphs.get("labels").version == 3  # reading a graph still shows its latest
    # an explicit version still wins, the newest one too
    assert label_of(store, "labels", version=3) == (3, "three")
    with pytest.raises(StartError, match="has no version 4: its versions are 1 to 3"):
        start_run(store, "labels", {}, version=4)
    with pytest.raises(StartError, match="is a graph file: --version names a version of a stored graph"):
        start_run(store, graph_file(tmp_path, [{"id": "a", "type": "TRANSFORM", "transform_expr": "({})"}], []), {},
                  version=1)  # fmt: skip
    shown = promotions(store, "labels")
    assert shown.promoted_version == 2
    [only] = shown.history
    assert (only.gate, only.verdict) == ("fixes@1", "pass")
    assert only.as_json()["evaluation_id"] == passed.id
    assert only.describe() == f"through gate fixes@1 (evaluation {passed.id[:8]}: pass)"


@pytest.mark.parametrize("said", ["fail", "inconclusive", "missing", "running", "failed to run", "other version"])
def test_anything_but_a_pass_is_refused_then_forced_with_a_note(store: Store, said: str) -> None:
    graph_id = three_versions(store)
    fixes = eval_set(store, graph_id)
    newest = None
    if said in ("fail", "inconclusive"):
        evaluated(store, fixes, 2, "pass")  # an older pass does not count: the newest verdict does
        newest = evaluated(store, fixes, 2, said)
    elif said == "running":
        evaluated(store, fixes, 2, None)
    elif said == "failed to run":
        evaluated(store, fixes, 2, "pass", ended="failed")
    elif said == "other version":
        evaluated(store, fixes, 3, "pass")
    with pytest.raises(GateRefused) as refused:
        promote(store, "labels", 2, gate="fixes", force=False, note=None, by="ana")
    error = refused.value
    assert (error.kind, error.code) == ("conflict", "gate_refused")
    assert "plait eval run labels --set fixes@1 --version 2" in (error.hint or "")
    assert "pass --force --note TEXT to promote anyway" in (error.hint or "")
    if newest is not None:
        assert f"its newest evaluation ({newest.id}) says {said}, not pass" in error.message
        assert error.details == [f"verdict: {said}", "  fail         regressions 2 > 0 allowed"]
    else:
        assert "the gate refused version 2 of 'labels' on fixes@1: no evaluation of it has completed" in error.message
    assert store.evaluations.promoted_version(graph_id) is None  # nothing was written
    with pytest.raises(PromotionError, match="a forced promotion needs a note"):
        promote(store, "labels", 2, gate="fixes", force=True, note="  ", by="ana")
    forced = promote(store, "labels", 2, gate="fixes", force=True, note="hotfix for the outage", by="bo")
    assert (forced.forced, forced.note, forced.promoted_by) == (True, "hotfix for the outage", "bo")
    assert forced.evaluation_id == (newest.id if newest is not None else None)  # the verdict it overrode
    assert store.evaluations.promoted_version(graph_id) == 2
    [shown] = promotions(store, "labels").history
    over = f" over gate fixes@1 (evaluation {newest.id[:8]}: {said})" if newest is not None else ""
    assert shown.describe() == f"forced{over}: hotfix for the outage"


def test_the_gate_names_a_revision_or_the_newest_and_each_promotion_is_kept(store: Store) -> None:
    graph_id = three_versions(store)
    first = eval_set(store, graph_id)
    evaluated(store, first, 3, "pass")
    second = eval_set(store, graph_id)  # fixes@2: the gate `fixes` now means this one
    with pytest.raises(GateRefused, match="on fixes@2: no evaluation of it has completed"):
        promote(store, "labels", 3, gate="fixes", force=False, note=None, by="ana")
    promote(store, "labels", 3, gate="fixes@1", force=False, note=None, by="ana")
    evaluated(store, second, 1, "pass")
    back = promote(store, "labels", 1, gate="fixes", force=False, note="back to the first", by="ana")
    assert (back.version, back.previous_version, back.forced, back.note) == (1, 3, False, "back to the first")
    history = promotions(store, "labels").history
    assert [(p.promotion.version, p.gate) for p in history] == [(1, "fixes@2"), (3, "fixes@1")]
    assert label_of(store, "labels") == (1, "one")


def test_requests_that_cannot_be_made_are_refused_saying_how(store: Store) -> None:
    graph_id = three_versions(store)
    eval_set(store, graph_id)

    def refused(version: int = 2, gate: str | None = "fixes", force: bool = False, note: str | None = None) -> str:
        with pytest.raises(PromotionError) as caught:
            promote(store, "labels" if version else "nowhere", version or 1, gate=gate, force=force, note=note,
                    by="ana")  # fmt: skip
        assert not isinstance(caught.value, GateRefused)
        return f"{caught.value.kind}: {caught.value.message} | {caught.value.hint}"

    assert refused(gate=None).startswith("invalid: a version is promoted through the gate")
    assert "pass --gate NAME" in refused(gate=None)
    assert refused(force=True).startswith("invalid: a forced promotion needs a note saying why")
    assert refused(version=9).startswith("not_found: graph 'labels' has no version 9: its versions are 1 to 3")
    assert refused(version=0).startswith("not_found: no graph 'nowhere'")
    assert refused(gate="typo").startswith("not_found: graph 'labels' has no evaluation set 'typo'")
    assert refused(gate="typo", force=True, note="x").startswith("not_found:")  # a typo is never forced
    assert refused(gate="fixes@x").startswith("invalid: 'fixes@x' names no revision")
    assert refused(note="x" * 2001).startswith("invalid: the note is 2001 characters long")
    sync_system_graphs(store)
    system = promote_refused(store, "plait.kb_search")
    assert system == ("forbidden", "fork it (`plait graphs fork plait.kb_search`) and promote versions of the fork")
    store.graph_admin.delete(graph_id, "labels", "user")
    assert refused(force=True, note="x").startswith("not_found: graph 'labels' was deleted")
    assert store.evaluations.promotions(graph_id) == []


def promote_refused(store: Store, ref: str) -> tuple[str, str | None]:
    with pytest.raises(PromotionError) as caught:
        promote(store, ref, 1, gate=None, force=True, note="older is better", by="ana")
    return str(caught.value.kind), caught.value.hint


def test_a_batch_and_a_schedule_firing_run_the_promoted_version(store: Store, tmp_path: Path) -> None:
    graph_id = three_versions(store)
    schedule = add_schedule(store, "labels", "*/5 * * * *", {}, files=False, now=1_000_000.0)
    promote(store, "labels", 1, gate=None, force=True, note="the first is safest", by="ana")
    fired = Scheduler(store, lambda run_id: None).tick(schedule.next_fire_at + 1)
    assert [store.runs.get(run_id).graph_version for run_id in fired] == [1]
    files = BatchFiles.of(write_records(tmp_path / "in.jsonl", ["{}", "{}"]), tmp_path / "out.jsonl")
    progress = execute_batch(store, None, "labels", files)
    assert progress.done == 2
    lines = [json.loads(line) for line in files.output.read_text().splitlines()]
    assert [line["output"] for line in lines] == [{"label": "one"}] * 2
    assert store.evaluations.promoted_version(graph_id) == 1


def test_a_subgraph_without_a_pin_runs_the_promoted_version_and_a_pin_wins(store: Store, tmp_path: Path) -> None:
    three_versions(store)
    promote(store, "labels", 2, gate=None, force=True, note="two is reviewed", by="ana")
    follows = graph_file(tmp_path, [{"id": "s", "type": "SUBGRAPH", "graph": "labels"}], [])
    pinned = graph_file(tmp_path, [{"id": "s", "type": "SUBGRAPH", "graph": "labels", "graph_version": 3}], [])
    assert execute(store, follows).output == {"label": "two"}
    assert execute(store, pinned).output == {"label": "three"}
