"""Pacing the event loop for many runs at once: deferrable work goes a few continuations per
loop turn (`plait.llm.slots.paced`), a group commit holds at most `MAX_UNITS` node units, the
collector is tuned once per process, and Plait's commands run on uvloop (`eventloop.run`)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections import Counter
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from plait.engine import commits, eventloop
from plait.engine.collector import GC_THRESHOLDS
from plait.engine.runner import Engine
from plait.llm.slots import DRAIN_TURNS, PER_TURN, count_call, may_go_on, paced
from plait.model.enums import NodeStatus, RunStatus
from plait.runs.start import start_run
from plait.store import Store
from plait.store.writes import Claim
from tests.engine.test_engine import graph_file, llm, script

uvloop = pytest.importorskip("uvloop", reason="uvloop is a dependency outside Windows")

LOOPS: dict[str, Callable[[Coroutine[Any, Any, Any]], Any]] = {"asyncio": asyncio.run, "uvloop": uvloop.run}


async def paced_turns(count: int) -> list[tuple[int, int]]:
    """Queue `count` paced continuations at once; (index, turn) in the order they went on. A task
    that is not paced goes on every loop turn and counts the turns."""
    turn = 0
    stop = False

    async def ticker() -> None:
        nonlocal turn
        while not stop:
            turn += 1
            await asyncio.sleep(0)

    went: list[tuple[int, int]] = []

    async def deferred(i: int) -> None:
        await paced()
        went.append((i, turn))

    clock = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    await asyncio.gather(*(deferred(i) for i in range(count)))
    stop = True
    await clock
    return went


def per_turn(went: list[tuple[int, int]]) -> dict[int, int]:
    return dict(Counter(turn for _, turn in went))


@pytest.mark.parametrize("loop", LOOPS)
def test_paced_work_goes_a_few_continuations_per_loop_turn(loop: str) -> None:
    """20 continuations queued together go PER_TURN per turn, in arrival order."""
    went = LOOPS[loop](paced_turns(20))
    assert [i for i, _ in went] == list(range(20)), "paced continuations keep their arrival order"
    turns = per_turn(went)
    assert max(turns.values()) <= PER_TURN, turns
    assert len(turns) >= 20 // PER_TURN, f"20 continuations went in {len(turns)} turns"


def test_a_backlog_of_paced_work_drains_in_a_bounded_number_of_turns() -> None:
    """200 queued continuations: a sixteenth of the queue goes each turn while it is long, so the
    backlog is gone in ~40 turns, not 200 / PER_TURN (answers held back hold their runs' memory)."""
    turns = per_turn(asyncio.run(paced_turns(200)))
    assert sum(turns.values()) == 200
    assert max(turns.values()) == 200 // DRAIN_TURNS, turns
    assert len(turns) <= 45, f"the backlog took {len(turns)} turns"


def test_a_loop_that_used_paced_work_is_not_kept_alive() -> None:
    """The pacers are per loop and must not keep a finished loop (each test, each CLI command
    makes one) from being collected."""

    async def scenario() -> weakref.ref[asyncio.AbstractEventLoop]:
        await paced_turns(5)
        return weakref.ref(asyncio.get_running_loop())

    loop = asyncio.run(scenario())
    gc.collect()
    assert loop() is None


def test_a_cancelled_paced_wait_gives_its_place_up() -> None:
    async def scenario() -> list[str]:
        went: list[str] = []

        async def deferred(name: str) -> None:
            await paced()
            went.append(name)

        tasks = {name: asyncio.create_task(deferred(name)) for name in ("a", "b", "c")}
        await asyncio.sleep(0)  # all three are queued
        tasks["b"].cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        return went

    assert asyncio.run(scenario()) == ["a", "c"]


def test_a_commit_holds_at_most_max_units_and_every_unit_is_written(store: Store, tmp_path: Path) -> None:
    """40 units submitted in one loop turn (a burst of answers, or of runs being set up) go in
    transactions of at most MAX_UNITS, in order, and each submitter gets its own results."""
    run_id = start_run(store, graph_file(tmp_path, [llm("a")], []), {})
    group = commits.GroupCommit(store.runs.nodes)
    sizes: list[int] = []
    write = store.runs.nodes.write

    def recording(units: Any) -> Any:
        sizes.append(len(units))
        return write(units)

    store.runs.nodes.write = recording  # type: ignore[method-assign]

    async def burst() -> list[Any]:
        futures = [group.submit([Claim(run_id, f"n{i}", 1, "owner-1")]) for i in range(40)]
        return await asyncio.gather(*futures)

    results = asyncio.run(burst())
    assert sizes == [min(commits.MAX_UNITS, 40 - k) for k in range(0, 40, commits.MAX_UNITS)]
    assert [r[0].node_id for r in results] == [f"n{i}" for i in range(40)]
    assert {n.node_id for n in store.runs.node_runs(run_id)} == {f"n{i}" for i in range(40)}


def test_many_branches_finishing_together_all_commit(store: Store, tmp_path: Path) -> None:
    """The paced, capped path end to end: 40 branches answered at once, every node committed."""
    branches = [llm(f"b{i}") for i in range(40)]
    edges = [{"source": "root", "target": b["id"]} for b in branches]
    graph = graph_file(tmp_path, [llm("root"), *branches], edges)
    run_id = start_run(store, graph, {})
    engine = Engine(store, script(tmp_path, [{"text": "x", "delay_ms": 30}]), llm_concurrency=64)

    async def go() -> Any:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    assert asyncio.run(go()).status == RunStatus.COMPLETED
    done = {n.node_id for n in store.runs.node_runs(run_id) if n.status == NodeStatus.COMPLETED}
    assert done == {"root", *(b["id"] for b in branches)}


def test_building_an_engine_raises_the_collector_thresholds(store: Store, tmp_path: Path) -> None:
    Engine(store, None)
    assert all(now >= tuned for now, tuned in zip(gc.get_threshold(), GC_THRESHOLDS, strict=True))


def test_plait_commands_run_on_uvloop_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    async def loop_module() -> str:
        return type(asyncio.get_running_loop()).__module__

    monkeypatch.delenv("PLAIT_LOOP", raising=False)
    assert eventloop.loop_name() == "uvloop"
    assert eventloop.run(loop_module()).startswith("uvloop")
    monkeypatch.setenv("PLAIT_LOOP", "asyncio")
    assert eventloop.loop_name() == "asyncio"
    assert eventloop.run(loop_module()).startswith("asyncio")


def test_deferrable_work_goes_on_at_once_while_nothing_waits_for_the_loop() -> None:
    """No model call in flight, nothing queued: up to PER_TURN continuations a turn go on at once
    (the two loop turns of `paced()` are a share of every quick node's time); then they wait."""

    async def scenario() -> list[list[bool]]:
        turns = []
        for _ in range(2):
            turns.append([may_go_on() for _ in range(PER_TURN + 1)])
            await asyncio.sleep(0)  # the next loop turn
        return turns

    assert asyncio.run(scenario()) == [[True] * PER_TURN + [False]] * 2


def test_deferrable_work_waits_its_turn_while_a_model_call_is_in_flight_or_others_queue() -> None:
    async def scenario() -> tuple[bool, bool, bool, bool]:
        count_call(1)
        during_call = may_go_on()
        count_call(-1)
        after_call = may_go_on()
        await asyncio.sleep(0)
        queued = asyncio.ensure_future(paced())
        await asyncio.sleep(0)  # it waits in the pacer now
        behind_queue = may_go_on()
        await queued
        await asyncio.sleep(0)
        return during_call, after_call, behind_queue, may_go_on()

    assert asyncio.run(scenario()) == (False, True, False, True)


def test_a_chain_of_quick_nodes_does_not_wait_in_the_pacer(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answered at once, with no other call in flight: a node's commit is followed by the next
    node at once; with a slow branch in flight beside it, the commits wait their turn."""
    from plait.engine import scheduler

    waited: list[int] = []

    async def counted() -> None:
        waited.append(1)
        await paced()

    monkeypatch.setattr(scheduler, "paced", counted)
    chain = [llm(f"n{i}") for i in range(5)]
    edges = [{"source": f"n{i}", "target": f"n{i + 1}"} for i in range(4)]
    graph = graph_file(tmp_path, chain, edges)
    engine = Engine(store, script(tmp_path, [{"text": "x"}]))

    async def go(run_id: str) -> Any:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    assert asyncio.run(go(start_run(store, graph, {}))).status == RunStatus.COMPLETED
    assert waited == []
    slow = [*chain, llm("slow", prompt="slow, please")]
    graph = graph_file(tmp_path, slow, [*edges, {"source": "n0", "target": "slow"}])
    engine = Engine(store, script(tmp_path, [{"match": "slow", "text": "x", "delay_ms": 300}, {"text": "x"}]))
    assert asyncio.run(go(start_run(store, graph, {}))).status == RunStatus.COMPLETED
    assert len(waited) >= 3  # n1..n4 finished while `slow` was in flight
