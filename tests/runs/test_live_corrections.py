"""An override arriving while an engine executes the run (issue: "the running nodes finish,
then are marked stale under INVALIDATE"): the correction is written at once, the engine takes
it up at its next commit."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from plait.engine.events import Event, NodeCompleted, NodeStale, NodeStarted
from plait.engine.runner import Engine, RunOutcome
from plait.model.enums import DownstreamPolicy, NodeStatus, RunStatus
from plait.runs.check import check_run
from plait.runs.corrections import Corrections
from plait.runs.start import start_run
from plait.store import Store
from tests.engine.test_ahead import corrected_while_held
from tests.engine.test_engine import graph_file, llm, script
from tests.runs.test_corrections import edge, newest, text, tr

SLOW_MS = 1500


def chain(tmp_path: Path) -> str:
    """a -> slow (a model call that takes a while, reading a) -> c (appends to slow's text)."""
    return graph_file(
        tmp_path,
        [
            tr("a", "({text: input.t})"),
            llm("slow", "Value: {{ a.text }}"),
            tr("c", "({text: current.text + '+c'})"),
        ],
        [edge("a", "slow"), edge("slow", "c"), edge("c", "END")],
    )


def run_with_override_during(
    store: Store,
    tmp_path: Path,
    graph: str,
    node: str,
    value: Any,
    policy: DownstreamPolicy,
    trigger: tuple[type[Event], str] = (NodeStarted, "slow"),
    seen: list[tuple[type[Event], str | None]] | None = None,
) -> tuple[str, RunOutcome, list[Any]]:
    """Start a run; at the `trigger` event (while `slow` runs), override `node` from another
    thread; run to the end. `seen` collects the engine's events (class, node)."""
    run_id = start_run(store, graph, {"t": "old"})
    provider = script(tmp_path, [{"node": "slow", "output": {"text": "slow-answer"}, "delay_ms": SLOW_MS}])
    engine = Engine(store, provider)
    results: list[Any] = []
    threads: list[threading.Thread] = []

    def correct() -> None:
        try:
            results.append(Corrections(store).override(run_id, node, value, policy=policy))
        except Exception as exc:  # reported by the assertions of the caller
            results.append(exc)

    def on_event(event: Event) -> None:
        if seen is not None:
            seen.append((type(event), event.node_id))
        if (type(event), event.node_id) == trigger and not threads:
            threads.append(threading.Thread(target=correct))
            threads[0].start()

    engine.events.subscribe(on_event)

    async def go() -> RunOutcome:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    outcome = asyncio.run(go())
    for t in threads:
        t.join()
    return run_id, outcome, results


def test_invalidate_marks_the_running_reader_stale_when_it_finishes(store: Store, tmp_path: Path) -> None:
    seen: list[tuple[type[Event], str | None]] = []
    run_id, outcome, results = run_with_override_during(
        store, tmp_path, chain(tmp_path), "a", {"text": "new"}, DownstreamPolicy.INVALIDATE, seen=seen
    )
    assert (NodeStale, "slow") in seen  # announced to live listeners (SSE) when it ends stale
    assert seen.index((NodeStale, "slow")) > seen.index((NodeCompleted, "slow"))
    assert len(results) == 1
    assert not isinstance(results[0], Exception), results[0]
    assert outcome.status == RunStatus.COMPLETED
    nodes = newest(store, run_id)
    assert text(nodes["a"]) == "new"
    assert nodes["a"].output["text"] == "old"
    assert (nodes["slow"].activation, nodes["slow"].status) == (1, NodeStatus.STALE)
    assert "Value: old" in nodes["slow"].input_snapshot["rendered_user_prompt"]
    assert nodes["c"].status == NodeStatus.COMPLETED  # INVALIDATE reaches the direct downstream only
    assert store.runs.get(run_id).corrections == 1


def test_rerun_runs_the_reader_again_with_the_correction(store: Store, tmp_path: Path) -> None:
    seen: list[tuple[str, str | None]] = []
    run_id, outcome, _ = run_with_override_during(
        store, tmp_path, chain(tmp_path), "a", {"text": "new"}, DownstreamPolicy.RERUN, seen=seen
    )
    assert outcome.status == RunStatus.COMPLETED
    slow = [r for r in store.runs.node_runs(run_id) if r.node_id == "slow"]
    assert [(r.activation, r.status) for r in sorted(slow, key=lambda r: r.activation)] == [
        (1, "completed"),
        (2, "completed"),
    ]
    nodes = newest(store, run_id)
    assert "Value: new" in nodes["slow"].input_snapshot["rendered_user_prompt"]
    assert nodes["slow"].consumed["a"] == 2
    # c ran from slow's first answer, then the rerun made that stale (RERUN: only the direct downstream reruns)
    assert nodes["c"].status == NodeStatus.STALE
    assert (NodeStale, "c") in seen


def test_rerun_all_reruns_everything_after_and_the_run_ends_consistent(store: Store, tmp_path: Path) -> None:
    run_id, outcome, _ = run_with_override_during(
        store, tmp_path, chain(tmp_path), "a", {"text": "new"}, DownstreamPolicy.RERUN_ALL
    )
    assert outcome.status == RunStatus.COMPLETED
    nodes = newest(store, run_id)
    assert "Value: new" in nodes["slow"].input_snapshot["rendered_user_prompt"]
    assert nodes["c"].status == NodeStatus.COMPLETED
    assert nodes["c"].consumed["slow"] == nodes["slow"].activation  # c read the rerun's answer
    assert outcome.output == {"text": "slow-answer+c"}


def test_a_node_not_started_yet_reads_the_corrected_value(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [
            tr("a", "({text: input.t})"),
            llm("slow", "Wait for it"),
            tr("join", "({text: nodes.a.text + '|' + nodes.slow.text})"),
        ],
        [edge("a", "join"), edge("slow", "join"), edge("join", "END")],
    )
    run_id, outcome, results = run_with_override_during(
        store, tmp_path, graph, "a", {"text": "new"}, DownstreamPolicy.INVALIDATE, trigger=(NodeCompleted, "a")
    )
    assert not isinstance(results[0], Exception), results[0]
    assert outcome.output == {"text": "new|slow-answer"}
    assert newest(store, run_id)["join"].status == NodeStatus.COMPLETED


def test_a_value_that_freezes_when_read_is_not_corrected_while_running(store: Store, tmp_path: Path) -> None:
    graph = graph_file(
        tmp_path,
        [
            tr("a", "({text: input.t})", freeze="on_consume"),
            llm("slow", "Value: {{ a.text }}"),
        ],
        [edge("a", "slow"), edge("slow", "END")],
    )
    run_id, outcome, results = run_with_override_during(
        store, tmp_path, graph, "a", {"text": "new"}, DownstreamPolicy.INVALIDATE
    )
    assert outcome.status == RunStatus.COMPLETED
    (refused,) = results
    assert "freeze when read" in str(refused)
    assert text(newest(store, run_id)["a"]) == "old"


def test_a_branch_overridden_while_the_run_executes_is_taken_before_the_run_ends(tmp_path: Path) -> None:
    """a -> pick -> (yes | no), and a -> slow (a model call held open): while `slow` waits, a
    person gives `pick` the other branch. The engine takes it up at `slow`'s commit and settles
    the branches there, so `no` runs and `yes` leaves the run's output before the run ends."""
    graph = graph_file(
        tmp_path,
        [
            tr("a", "({text: input.t})"),
            {"id": "pick", "type": "CONDITION", "condition_expr": "nodes.a.text == 'old'"},
            tr("yes", "({text: 'yes'})"),
            tr("no", "({text: 'no'})"),
            llm("slow", "Value: {{ a.text }}"),
        ],
        [
            edge("a", "slow"),
            {"source": "a", "target": "pick"},
            {"source": "pick", "target": "yes", "condition_key": "true"},
            {"source": "pick", "target": "no", "condition_key": "false"},
            *(edge(n, "END") for n in ("yes", "no", "slow")),
        ],
    )
    with Store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        run_id = start_run(store, graph, {"t": "old"})
        outcome = corrected_while_held(
            store, run_id, "pick", {"branch": "false"}, content='{"text": "drafted"}', after=(NodeCompleted, "yes")
        )
        statuses = {node_id: rec.status for node_id, rec in newest(store, run_id).items()}
        problems = check_run(store, run_id).problems
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert (statuses["yes"], statuses["no"]) == (NodeStatus.SKIPPED, NodeStatus.COMPLETED)
    assert outcome.output == {"no": {"text": "no"}, "slow": {"text": "drafted"}}
    assert problems == []


def test_a_node_running_on_a_branch_overridden_away_ends_skipped(tmp_path: Path) -> None:
    """a -> pick -> (yes: a model call held open | no): while `yes` runs, a person gives `pick`
    the other branch. `yes` finishes and its answer is recorded, stale (it ran on the branch
    corrected away); then it is skipped (a new activation), so its output leaves the run's, and
    `no` runs."""
    graph = graph_file(
        tmp_path,
        [
            tr("a", "({text: input.t})"),
            {"id": "pick", "type": "CONDITION", "condition_expr": "nodes.a.text == 'old'"},
            llm("yes", "Value: {{ a.text }}"),
            tr("no", "({text: 'no'})"),
        ],
        [
            {"source": "a", "target": "pick"},
            {"source": "pick", "target": "yes", "condition_key": "true"},
            {"source": "pick", "target": "no", "condition_key": "false"},
            *(edge(n, "END") for n in ("yes", "no")),
        ],
    )
    with Store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        run_id = start_run(store, graph, {"t": "old"})
        outcome = corrected_while_held(store, run_id, "pick", {"branch": "false"}, content='{"text": "drafted"}')
        runs = store.runs.node_runs(run_id)
        statuses = {node_id: rec.status for node_id, rec in newest(store, run_id).items()}
        problems = check_run(store, run_id).problems
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert [r.status for r in runs if r.node_id == "yes"] == [NodeStatus.STALE, NodeStatus.SKIPPED]
    assert statuses["no"] == NodeStatus.COMPLETED
    assert outcome.output == {"no": {"text": "no"}}
    assert problems == []
