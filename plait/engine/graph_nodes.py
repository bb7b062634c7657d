"""SUBGRAPH, MAP and LOOP: nodes whose work is child runs of a graph (`plait.engine.child_runs`).

- SUBGRAPH runs the graph once; its output is the child's output, with `_prompt_graph_run_id`
  naming the child when it is an object.
- MAP runs it once per item of the list at `items`, at most `max_concurrency` at a time, and
  gathers the outputs in the items' order; a failed item fails the node, is left out (`skip`),
  or leaves an error entry in its place (`collect`).
- LOOP runs it while `while_expr` holds (asked before each iteration, with `iteration` done so
  far and `last`, the previous iteration's output), at most `max_iterations` times; its output
  is the last iteration's output (`current` when no iteration ran).

A child's input is the node's `inputs` rendered with the node's names, plus the item (under
`item_name`) and its `index` for a MAP, or `loop` (`iteration`, `previous`) for a LOOP; without
`inputs`, it is the item (an object; another value goes under `item_name`), or for a LOOP
`current` with `loop` added.

Every child is a run of its own, recorded and resumable; executing the node again (after a
crash, a pause or a restart) takes each finished child's output as it is and continues the
others. A child paused for a person or a time leaves the node waiting; the run then pauses, and
continues once the child is continued (it is due to wake no later than the child).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from plait.compile.templates import split_path
from plait.engine.child_runs import ChildGraphError
from plait.engine.events import NodeItemEnded
from plait.engine.outcome import RunOutcome
from plait.engine.ports import ChildGraph, ChildRunner
from plait.engine.render import NodeView, arender_value, build_view, js_scope, lookup
from plait.engine.render_limits import RenderLimitError
from plait.engine.results import Timer, budget_failure, checked_output, node_snapshot
from plait.engine.run_budget import BudgetExceeded, budget_of
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import Phase, RunState
from plait.model.enums import RunStatus
from plait.model.nodes import ItemErrors, LoopNode, MapNode, NodeBase, SubgraphNode
from plait.model.output_meta import CHILD_RUN
from plait.store import RunRecord

Executor = Callable[[NodeBase, RunState, Runtime], Awaitable[NodeResult]]


def with_child_run(output: Any, run_id: str) -> Any:
    """A child's output as its parent node's: an object names the child run it came from."""
    return {**output, CHILD_RUN: run_id} if isinstance(output, dict) else output


def child_failure(children: ChildRunner, outcome: RunOutcome, slug: str, where: str) -> str:
    message = children.failure(outcome)
    return f"{where}: child run {outcome.run_id} of '{slug}' ended {outcome.status}{f': {message}' if message else ''}"


class _Waiting:
    """Children paused for a person or a time: the node waits, due no later than the first."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.due: float | None = None

    def add(self, record: RunRecord) -> None:
        self.runs.append(record.id)
        if record.wake_at is not None:
            self.due = record.wake_at if self.due is None else min(self.due, record.wake_at)

    def result(self, node: NodeBase, state: RunState, snapshot: dict[str, Any]) -> NodeResult:
        snapshot["waiting_for"] = self.runs
        if self.due is not None:
            snapshot["due_at"] = state.wait_due[node.id] = self.due
        return NodeResult(Phase.WAITING, snapshot=snapshot)


def _start(node: NodeBase, state: RunState, rt: Runtime) -> tuple[NodeView, ChildRunner, ChildGraph]:
    state.wait_due.pop(node.id, None)  # decided again by the children as they are now
    return build_view(state, node), rt.children, rt.children.target(state, node)


async def _subgraph(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """SUBGRAPH: one child run; its output is the node's output, checked against the out-edge schemas."""
    assert isinstance(node, SubgraphNode)
    timer = Timer()
    snapshot = node_snapshot(node, state, {"current": state.current_for(node.id)})
    try:
        view, children, target = _start(node, state, rt)
        snapshot["graph"] = target.describe()
        names = view.names
        child_input = await arender_value(node.inputs, names, view.plan) if node.inputs else names["current"]
        existing = children.outcomes(state, node).get(0)
        outcome, paused = await children.run(state, node, target, 0, child_input, existing and existing[0])
    except ChildGraphError as exc:
        return NodeResult.failed(snapshot, [timer.attempt(error=str(exc))], kind=exc.kind, message=str(exc))
    snapshot["children"] = [outcome.run_id]
    if paused is not None:
        waiting = _Waiting()
        waiting.add(paused)
        return waiting.result(node, state, snapshot)
    if (stopped := over_budget(state, outcome)) is not None:
        return stopped
    if outcome.status != RunStatus.COMPLETED:
        message = child_failure(children, outcome, target.slug, f"node '{node.id}'")
        return NodeResult.failed(snapshot, [timer.attempt(error=message)], kind="child_failed", message=message)
    value = with_child_run(outcome.output, outcome.run_id)
    return checked_output(node, state, value, snapshot, [timer.attempt()])


async def item_input(node: MapNode, view: NodeView, item: Any, index: int) -> Any:
    """A MAP child's input: `inputs` rendered with the item and its index, or the item itself."""
    if node.inputs:
        return await arender_value(node.inputs, {**view.names, node.item_name: item, "index": index}, view.plan)
    return item if isinstance(item, dict) else {node.item_name: item}


def gather(node: MapNode, count: int, done: dict[int, Any], failed: dict[int, dict[str, Any]]) -> list[Any]:
    """A MAP's output from its children's outputs (`done`) and errors (`failed`) by index, in
    order, by `on_item_error` (the caller fails the node first under `fail`)."""
    out: list[Any] = []
    for index in range(count):
        if index in done:
            out.append(done[index])
        elif index in failed and node.on_item_error == ItemErrors.COLLECT:
            out.append({"error": failed[index], "index": index})
    return out


async def _map(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """MAP: a child run per item, `max_concurrency` at a time; the outputs gathered in order."""
    assert isinstance(node, MapNode)
    timer = Timer()
    snapshot = node_snapshot(node, state, {"current": state.current_for(node.id)}, items=node.items)
    try:
        view, children, target = _start(node, state, rt)
    except ChildGraphError as exc:
        return NodeResult.failed(snapshot, [timer.attempt(error=str(exc))], kind=exc.kind, message=str(exc))
    snapshot["graph"] = target.describe()
    items = lookup(view.names, split_path(node.items))
    if not isinstance(items, list):
        found = "nothing" if items is None else f"a {type(items).__name__}"
        message = f"node '{node.id}': items '{node.items}' is {found}, not a list; point `items` at a list"
        return NodeResult.failed(snapshot, [timer.attempt(error=message)], kind="input", message=message)
    snapshot["count"] = len(items)
    fan = _FanOut(node, state, rt, view, children, target, items)
    await fan.run()
    if fan.stopped is not None:
        return fan.stopped
    snapshot["failed"] = sorted(fan.failed)
    if fan.waiting.runs:
        return fan.waiting.result(node, state, snapshot)
    if fan.failed and node.on_item_error == ItemErrors.FAIL:
        first = min(fan.failed)
        message = f"node '{node.id}': item {first} failed: {fan.failed[first]['message']}"
        details = [f"item {i}: {e['message']}" for i, e in sorted(fan.failed.items())][:20]
        result = NodeResult.failed(
            snapshot, [timer.attempt(error=message)], kind="item_failed", message=message, details=details
        )
        return result
    value = gather(node, len(items), fan.done, fan.failed)
    return checked_output(node, state, value, snapshot, [timer.attempt(items=len(items), failed=len(fan.failed))])


class _FanOut:
    """One MAP activation's items: `max_concurrency` workers take the next index each, and only
    one item's input and child state are alive per worker, so memory stays bounded by the
    outputs gathered."""

    def __init__(
        self,
        node: MapNode,
        state: RunState,
        rt: Runtime,
        view: NodeView,
        children: ChildRunner,
        target: ChildGraph,
        items: list[Any],
    ):
        self.node, self.state, self.rt, self.view = node, state, rt, view
        self.children, self.target, self.items = children, target, items
        self.known = children.outcomes(state, node)
        self.done: dict[int, Any] = {}
        self.failed: dict[int, dict[str, Any]] = {}
        self.waiting = _Waiting()
        self.stopped: NodeResult | None = None
        """The run reached its budget: no more items start, and the node fails with it."""
        self._next = iter(range(len(items)))

    async def run(self) -> None:
        workers = min(self.node.max_concurrency, len(self.items))
        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(self._work())

    def _stopped(self) -> bool:
        return self.stopped is not None or (bool(self.failed) and self.node.on_item_error == ItemErrors.FAIL)

    async def _work(self) -> None:
        for index in self._next:
            if self._stopped():
                return
            known = self.known.get(index)
            if known is not None and known[1] == RunStatus.COMPLETED:
                self.done[index] = known[2]  # finished before: never run again
                continue
            await self._item(index)

    async def _item(self, index: int) -> None:
        where = f"node '{self.node.id}', item {index}"
        try:
            child_input = await item_input(self.node, self.view, self.items[index], index)
            known = self.known.get(index)
            outcome, paused = await self.children.run(
                self.state, self.node, self.target, index, child_input, known and known[0]
            )
        except ChildGraphError as exc:
            self.failed[index] = {"kind": exc.kind, "message": str(exc)}
            return
        except RenderLimitError as exc:  # its `inputs` went over the render budget
            self.failed[index] = {"kind": "render", "message": f"{where}: {exc}"}
            return
        except BudgetExceeded:
            self.stopped = budget_failure(self.state.budget) if self.state.budget is not None else None
            return
        if (stopped := over_budget(self.state, outcome)) is not None:
            self.stopped = stopped
            return
        if paused is not None:
            self.waiting.add(paused)
        elif outcome.status == RunStatus.COMPLETED:
            self.done[index] = outcome.output
        else:
            message = child_failure(self.children, outcome, self.target.slug, where)
            self.failed[index] = {"kind": "child_failed", "message": message, "run_id": outcome.run_id}
        self._announce(index, outcome)

    def _announce(self, index: int, outcome: RunOutcome) -> None:
        """Per-item progress for whoever watches the parent run (`node:item`)."""
        self.rt.emit(
            NodeItemEnded(
                self.state.run_id,
                self.node.id,
                index=index,
                count=len(self.items),
                status=str(outcome.status),
                child_run_id=outcome.run_id,
            )
        )


async def _loop(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """LOOP: a child run per iteration while `while_expr` holds, at most `max_iterations`."""
    assert isinstance(node, LoopNode)
    timer = Timer()
    current = state.current_for(node.id)
    snapshot = node_snapshot(node, state, {"current": current})
    try:
        view, children, target = _start(node, state, rt)
    except ChildGraphError as exc:
        return NodeResult.failed(snapshot, [timer.attempt(error=str(exc))], kind=exc.kind, message=str(exc))
    snapshot["graph"] = target.describe()
    known = children.outcomes(state, node)
    scope = js_scope(state, node)
    last: Any = None
    last_run: str | None = None
    iteration = 0
    sandbox = rt.sandbox()
    ran: list[str] = []
    while True:
        try:
            keep = await sandbox.aevaluate(
                node.while_expr,
                {**scope, "iteration": iteration, "last": last},
                timeout_s=node.timeout_s,
                owner=state.root_run_id or None,
            )
        except Exception as exc:  # SandboxError and friends: the message is the user's answer
            message = f"node '{node.id}': while_expr at iteration {iteration}: {exc}"
            snapshot["children"] = ran
            return NodeResult.failed(snapshot, [timer.attempt(error=message)], kind="expression", message=message)
        if not keep:
            break
        if iteration >= node.max_iterations:
            snapshot["children"] = ran
            message = f"node '{node.id}' reached max_iterations ({node.max_iterations}) with while_expr still true"
            if node.on_max_iterations == "fail":
                hint = "; raise max_iterations, fix while_expr, or set on_max_iterations: stop to keep the last output"
                return NodeResult.failed(
                    snapshot, [timer.attempt(error=message)], kind="max_iterations", message=message + hint
                )
            snapshot["stopped"] = message
            break
        loop = {"iteration": iteration, "previous": last}
        found = known.get(iteration)
        if found is not None and found[1] == RunStatus.COMPLETED:
            last_run, last = found[0], found[2]
        else:
            if node.inputs:
                child_input = await arender_value(node.inputs, {**view.names, "loop": loop}, view.plan)
            else:
                child_input = {**(current if isinstance(current, dict) else {"current": current}), "loop": loop}
            try:
                outcome, paused = await children.run(state, node, target, iteration, child_input, found and found[0])
            except ChildGraphError as exc:
                snapshot["children"] = ran
                return NodeResult.failed(snapshot, [timer.attempt(error=str(exc))], kind=exc.kind, message=str(exc))
            ran.append(outcome.run_id)
            if (stopped := over_budget(state, outcome)) is not None:
                return stopped
            if paused is not None:
                snapshot["children"] = ran
                waiting = _Waiting()
                waiting.add(paused)
                return waiting.result(node, state, snapshot)
            if outcome.status != RunStatus.COMPLETED:
                snapshot["children"] = ran
                message = child_failure(children, outcome, target.slug, f"node '{node.id}', iteration {iteration}")
                return NodeResult.failed(snapshot, [timer.attempt(error=message)], kind="child_failed", message=message)
            last_run, last = outcome.run_id, outcome.output
        if last_run not in ran:
            ran.append(last_run)
        iteration += 1
    snapshot["children"] = ran
    snapshot["iterations"] = iteration
    value = current if iteration == 0 else with_child_run(last, last_run or "")
    return checked_output(node, state, value, snapshot, [timer.attempt(iterations=iteration)])


def over_budget(state: RunState, outcome: RunOutcome) -> NodeResult | None:
    """The node's failure when the run reached its budget (in this engine, or in the child run
    `outcome` is of, executed elsewhere); None when it did not."""
    budget = state.budget
    if budget is not None and budget.reached is not None:
        return budget_failure(budget)
    reached = budget_of(outcome.error) if outcome.status == RunStatus.FAILED else None
    if reached is None:
        return None
    key, message = reached
    result = NodeResult.failed({}, [], kind="budget", message=message)
    result.error = {**(result.error or {}), "budget": key}
    return result


def _counting(execute: Executor) -> Executor:
    """`execute` with the tokens and cost its children spent added to its result."""

    async def counted(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
        result = await execute(node, state, rt)
        tokens_input, tokens_output, cost = rt.children.spent(state, node)
        result.tokens_input += tokens_input
        result.tokens_output += tokens_output
        result.cost_usd += cost
        return result

    counted.__doc__ = execute.__doc__
    return counted


run_subgraph = _counting(_subgraph)
run_map = _counting(_map)
run_loop = _counting(_loop)
