"""Corrections (SPEC §4): overrides with every downstream policy, reruns, reviews, rollback and
the field ledger, on diamond and conditional graphs, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from plait.engine.runner import Engine, RunOutcome
from plait.model.enums import DownstreamPolicy, NodeStatus, RunStatus
from plait.runs.corrections import CorrectionError, Corrections
from plait.runs.start import start_run
from plait.store import NodeRunRecord, Store, current_activations
from tests.engine.test_engine import graph_file


def tr(node_id: str, expr: str, **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "TRANSFORM", "transform_expr": expr, **extra}


def edge(source: str, target: str) -> dict[str, Any]:
    return {"source": source, "target": target, "schema_id": "text"}


def diamond(tmp_path: Path, **a_extra: Any) -> str:
    """a -> (b, c) -> d: b and c append to a's text, d joins them."""
    return graph_file(
        tmp_path,
        [
            tr("a", "({text: input.t})", **a_extra),
            tr("b", "({text: current.text + '+b'})"),
            tr("c", "({text: current.text + '+c'})"),
            tr("d", "({text: current.b.text + '|' + current.c.text})"),
        ],
        [edge("a", "b"), edge("a", "c"), edge("b", "d"), edge("c", "d"), edge("d", "END")],
    )


def drive(store: Store, run_id: str) -> RunOutcome:
    return drive_with(store, run_id, None)


def drive_with(store: Store, run_id: str, provider: Any) -> RunOutcome:
    async def go() -> RunOutcome:
        engine = Engine(store, provider)
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    return asyncio.run(go())


def ran(store: Store, graph: str, run_input: dict[str, Any]) -> str:
    run_id = start_run(store, graph, run_input)
    outcome = drive(store, run_id)
    assert outcome.status in (RunStatus.COMPLETED, RunStatus.PAUSED), outcome.error
    return run_id


def newest(store: Store, run_id: str) -> dict[str, NodeRunRecord]:
    return current_activations(store.runs.node_runs(run_id))


def text(rec: NodeRunRecord) -> str:
    return str(rec.effective_output["text"])


def snapshot_rows(store: Store, run_id: str) -> tuple[Any, ...]:
    """Everything a refused correction must leave unchanged."""
    run = store.runs.get(run_id)
    return (
        run.status,
        run.output,
        sorted(
            (r.node_id, r.activation, r.status, repr(r.override), repr(r.output)) for r in store.runs.node_runs(run_id)
        ),
        [(v.owner_id, v.version, v.kind, repr(v.value), repr(v.frozen)) for v in store.ledger.history(run_id)],
    )


def test_override_keeps_the_original_and_invalidates_the_direct_downstream(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, diamond(tmp_path), {"t": "x"})
    result = Corrections(store).override(run_id, "a", {"text": "fixed"}, note="typo")
    assert sorted(result.stale) == ["b", "c"]
    assert not result.needs_run
    nodes = newest(store, run_id)
    assert nodes["a"].status == NodeStatus.OVERRIDDEN
    assert nodes["a"].output["text"] == "x"  # the original stays
    assert text(nodes["a"]) == "fixed"
    assert nodes["a"].override_note == "typo"
    assert (nodes["b"].status, nodes["c"].status, nodes["d"].status) == ("stale", "stale", "completed")
    history = store.ledger.history(run_id, "a")
    assert [(v.version, v.kind) for v in history] == [(1, "execute"), (2, "override")]
    assert history[1].field("text") == "fixed"


def test_keep_changes_only_the_node(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, diamond(tmp_path), {"t": "x"})
    result = Corrections(store).override(run_id, "b", {"text": "kept"}, policy=DownstreamPolicy.KEEP)
    assert result.stale == []
    assert {n: r.status for n, r in newest(store, run_id).items()} == {
        "a": "completed", "b": "overridden", "c": "completed", "d": "completed"
    }  # fmt: skip


def test_rerun_reruns_the_direct_downstream_and_marks_the_rest_stale(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, diamond(tmp_path), {"t": "x"})
    result = Corrections(store).override(run_id, "a", {"text": "y"}, policy=DownstreamPolicy.RERUN)
    assert sorted(result.queued) == ["b", "c"]
    assert result.stale == ["d"]
    assert drive(store, run_id).status == RunStatus.COMPLETED
    nodes = newest(store, run_id)
    assert (nodes["b"].activation, text(nodes["b"])) == (2, "y+b")
    assert (nodes["c"].activation, text(nodes["c"])) == (2, "y+c")
    assert (nodes["d"].activation, nodes["d"].status, text(nodes["d"])) == (1, "stale", "x+b|x+c")
    old_b = next(r for r in store.runs.node_runs(run_id) if r.node_id == "b" and r.activation == 1)
    assert old_b.output["text"] == "x+b"  # the old activation stays as history


def test_rerun_all_reruns_the_whole_downstream_and_updates_the_run_output(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, diamond(tmp_path), {"t": "x"})
    result = Corrections(store).override(run_id, "a", {"text": "y"}, policy=DownstreamPolicy.RERUN_ALL)
    assert result.queued == ["b", "c", "d"] or sorted(result.queued) == ["b", "c", "d"]
    outcome = drive(store, run_id)
    assert outcome.status == RunStatus.COMPLETED
    assert outcome.output == {"text": "y+b|y+c"}
    assert store.runs.get(run_id).output == {"text": "y+b|y+c"}
    nodes = newest(store, run_id)
    assert all(nodes[n].activation == 2 for n in "bcd")
    assert nodes["d"].consumed == {"b": 2, "c": 2}  # its expression never reads the input


def test_override_of_the_exit_node_changes_the_run_output(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, diamond(tmp_path), {"t": "x"})
    Corrections(store).override(run_id, "d", {"text": "final"})
    assert store.runs.get(run_id).output == {"text": "final"}


def test_a_rerun_may_switch_a_condition_branch(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, condition_graph(tmp_path), {"n": 50})
    assert {n: r.status for n, r in newest(store, run_id).items()}["small"] == "skipped"
    Corrections(store).override(run_id, "level", {"text": "3"}, policy=DownstreamPolicy.RERUN_ALL)
    assert drive(store, run_id).status == RunStatus.COMPLETED
    nodes = newest(store, run_id)
    assert (nodes["big"].activation, nodes["big"].status) == (2, "skipped")
    assert (nodes["small"].activation, nodes["small"].status, text(nodes["small"])) == (2, "completed", "small")


def test_refused_overrides_change_nothing(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, diamond(tmp_path), {"t": "x"})
    before = snapshot_rows(store, run_id)
    corrections = Corrections(store)
    with pytest.raises(CorrectionError, match="does not match its out-edge schemas") as bad:
        corrections.override(run_id, "a", {"text": 5})
    assert any("text" in d for d in bad.value.details)
    with pytest.raises(CorrectionError, match="has no node 'nope'"):
        corrections.override(run_id, "nope", {"text": "x"})
    with pytest.raises(CorrectionError, match="no run"):
        corrections.override("no-such-run", "a", {"text": "x"})
    assert snapshot_rows(store, run_id) == before


def test_racing_overrides_are_both_recorded_in_order(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, diamond(tmp_path), {"t": "x"})
    errors: list[BaseException] = []

    def correct(value: str) -> None:
        try:
            Corrections(store).override(run_id, "b", {"text": value}, policy=DownstreamPolicy.KEEP)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=correct, args=(f"v{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    history = store.ledger.history(run_id, "b")
    assert [v.version for v in history] == [1, 2, 3, 4, 5]
    written = [v.field("text") for v in history[1:]]
    assert sorted(written) == ["v0", "v1", "v2", "v3"]
    assert text(newest(store, run_id)["b"]) == written[-1]  # the newest version is the effective output


def test_review_approve_and_correct_resume_the_run(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [
            tr("draft", "({text: input.t})"),
            {"id": "check", "type": "HUMAN_REVIEW", "review_prompt": "ok?"},
            tr("publish", "({text: current.text + '!'})"),
        ],
        [edge("draft", "check"), edge("check", "publish"), edge("publish", "END")],
    )
    approved = ran(store, graph, {"t": "hi"})
    assert store.runs.get(approved).status == RunStatus.PAUSED
    assert Corrections(store).review(approved, "check", approve=True).needs_run
    assert drive(store, approved).output == {"text": "hi!"}

    corrected = ran(store, graph, {"t": "hi"})
    with pytest.raises(CorrectionError, match="out-edge schemas"):
        Corrections(store).review(corrected, "check", {"wrong": 1})
    Corrections(store).review(corrected, "check", {"text": "hello"})
    assert drive(store, corrected).output == {"text": "hello!"}
    assert newest(store, corrected)["check"].status == NodeStatus.OVERRIDDEN
    with pytest.raises(CorrectionError, match="not waiting for a review"):
        Corrections(store).review(corrected, "check", approve=True)


def test_rerun_of_one_node_adds_an_activation_and_invalidates_after_it(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, diamond(tmp_path), {"t": "x"})
    result = Corrections(store).rerun(run_id, "b")
    assert result.queued == ["b"]
    assert result.stale == ["d"]
    assert drive(store, run_id).status == RunStatus.COMPLETED
    nodes = newest(store, run_id)
    assert (nodes["b"].activation, nodes["b"].status) == (2, "completed")
    assert nodes["d"].status == "stale"
    Corrections(store).rerun(run_id, "b", downstream=True)
    assert drive(store, run_id).status == RunStatus.COMPLETED
    assert {n: r.activation for n, r in newest(store, run_id).items()} == {"a": 1, "b": 3, "c": 1, "d": 2}


# ---------------------------------------------------------------- seed 003 Case #7


def case7(tmp_path: Path) -> str:
    """extract -> normalize (reads `entities`, which freezes when read) -> answer."""
    return graph_file(
        tmp_path,
        [
            tr("extract", "({text: input.t, entities: input.t.split(' ')})", freeze={"entities": "on_consume"}),
            tr("normalize", "({text: current.entities.map(e => e.toLowerCase()).join(',')})"),
            tr("answer", "({text: 'answer: ' + current.text})"),
        ],
        [
            {"source": "extract", "target": "normalize", "schema_id": "entities"},
            edge("normalize", "answer"),
            edge("answer", "END"),
        ],
        schemas=[
            {
                "id": "text",
                "schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            },
            {
                "id": "entities",
                "schema": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string"},
                        "entities": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["entities"],
                },
            },
        ],
    )


def test_case7_freeze_on_consume_is_applied_at_commit_and_rollback_unlocks(store: Store, tmp_path: Path) -> None:
    run_id = ran(store, case7(tmp_path), {"t": "Alice Bob"})
    history = store.ledger.history(run_id, "extract")
    assert [(v.version, v.kind) for v in history] == [(1, "execute"), (2, "freeze")]
    assert history[0].frozen_field("entities") is None  # writable until normalize committed
    frozen = history[1].frozen_field("entities")
    assert frozen is not None
    assert frozen["by"] == "normalize"
    assert frozen["policy"] == "on_consume"
    normalize = newest(store, run_id)["normalize"]
    assert normalize.consumed is not None
    assert normalize.consumed["extract"] == 1  # it read the value before the freeze

    corrections = Corrections(store)
    before = snapshot_rows(store, run_id)
    with pytest.raises(CorrectionError, match=r"extract\.entities is frozen .*by normalize"):
        corrections.override(run_id, "extract", {"text": "Alice Bob", "entities": ["Carol"]})
    with pytest.raises(CorrectionError, match="frozen"):
        corrections.rerun(run_id, "extract")
    assert snapshot_rows(store, run_id) == before  # no half-applied state

    # a write that leaves the frozen field as it is stays allowed
    corrections.override(
        run_id, "extract", {"text": "edited", "entities": ["Alice", "Bob"]}, policy=DownstreamPolicy.KEEP
    )

    result = corrections.rollback(run_id, "extract", "entities", to_version=1)
    rolled = store.ledger.history(run_id, "extract")[-1]
    assert (rolled.kind, rolled.frozen_field("entities")) == ("rollback", None)  # value and frozen state restored
    assert rolled.reason == "rollback of extract.entities to version 1"
    assert result.stale == []  # normalize read version 1: not newer than the target

    corrections.override(run_id, "extract", {"text": "x", "entities": ["Carol"]}, policy=DownstreamPolicy.RERUN_ALL)
    assert drive(store, run_id).output == {"text": "answer: carol"}
    refrozen = store.ledger.history(run_id, "extract")[-1]
    assert (refrozen.kind, refrozen.frozen_field("entities")["by"]) == ("freeze", "normalize")

    # rolling back to before the correction: the readers of the newer versions are now stale
    result = corrections.rollback(run_id, "extract", None, to_version=1)
    assert sorted(result.stale) == ["normalize"]
    nodes = newest(store, run_id)
    assert nodes["normalize"].status == NodeStatus.STALE
    assert nodes["extract"].effective_output["entities"] == ["Alice", "Bob"]


def test_a_failing_consumer_freezes_nothing(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [
            tr("extract", "({text: input.t})", freeze="on_consume"),
            tr("boom", "({text: current.text.missing.deep})"),  # valid, but a string has no `missing`
        ],
        [edge("extract", "boom")],
    )
    run_id = start_run(store, graph, {"t": "x"})
    assert drive(store, run_id).status == RunStatus.FAILED
    assert [v.kind for v in store.ledger.history(run_id, "extract")] == ["execute"]


def condition_graph(tmp_path: Path) -> str:
    """level -> route (CONDITION on level) -> big | small."""
    return graph_file(
        tmp_path,
        [
            tr("level", "({text: String(input.n)})"),
            {"id": "route", "type": "CONDITION", "condition_expr": "Number(current.text) > 10"},
            tr("big", "({text: 'big'})"),
            tr("small", "({text: 'small'})"),
        ],
        [
            edge("level", "route"),
            {"source": "route", "target": "big", "condition_key": "true"},
            {"source": "route", "target": "small", "condition_key": "false"},
        ],
    )


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (DownstreamPolicy.KEEP, {"route": (1, "completed"), "big": (1, "completed"), "small": (1, "skipped")}),
        (DownstreamPolicy.INVALIDATE, {"route": (1, "stale"), "big": (1, "completed"), "small": (1, "skipped")}),
        # the condition reruns and now picks "false": the branch it takes runs, the one it left is skipped
        (DownstreamPolicy.RERUN, {"route": (2, "completed"), "big": (2, "skipped"), "small": (2, "completed")}),
        (DownstreamPolicy.RERUN_ALL, {"route": (2, "completed"), "big": (2, "skipped"), "small": (2, "completed")}),
    ],
)
def test_every_policy_on_a_conditional_graph(
    store: Store, tmp_path: Path, policy: DownstreamPolicy, expected: dict[str, tuple[int, str]]
) -> None:
    run_id = ran(store, condition_graph(tmp_path), {"n": 50})
    result = Corrections(store).override(run_id, "level", {"text": "3"}, policy=policy)
    if result.needs_run:
        assert drive(store, run_id).status == RunStatus.COMPLETED
    nodes = newest(store, run_id)
    assert {n: (nodes[n].activation, str(nodes[n].status)) for n in expected} == expected
    assert text(nodes["level"]) == "3"
    route = nodes["route"].effective_output["branch"]
    assert route == ("false" if nodes["route"].activation == 2 else "true")
