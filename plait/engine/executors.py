"""Node executors: one coroutine per node type, each returning a `NodeResult` the engine commits.

Executors never write to the store: the engine commits a result atomically
when the executor returns, so a failed or killed node leaves
nothing half-applied.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from plait.engine.ahead import evaluation, taken_ahead
from plait.engine.graph_nodes import run_loop, run_map, run_subgraph
from plait.engine.knowledge_nodes import run_chunk, run_index, run_parse, run_retrieve
from plait.engine.llm_call import run_llm_call
from plait.engine.llm_condition import run_llm_condition
from plait.engine.program_nodes import run_code, run_tool
from plait.engine.render import build_view, for_the_record, js_scope, prompt_budget
from plait.engine.repair import repairable
from plait.engine.results import Timer, checked_output, node_snapshot
from plait.engine.runtime import NodeResult, Runtime
from plait.engine.state import Phase, RunState
from plait.model.nodes import (
    ConditionNode,
    HumanReviewNode,
    LlmCallNode,
    NodeBase,
    NodeType,
    TransformNode,
    WaitNode,
)

Executor = Callable[[NodeBase, RunState, Runtime], Awaitable[NodeResult]]


def branch_key(value: Any) -> str:
    """CONDITION values compare as strings: true/false, numbers as written, null."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)


async def _evaluate(node: NodeBase, state: RunState, rt: Runtime, expression: str) -> tuple[Any, NodeResult]:
    """Run a node's JS expression over its view: its value and a completed result, or a failed result."""
    scope = js_scope(state, node)
    timer = Timer()
    snapshot = node_snapshot(node, state, scope, expression=expression)
    try:
        early = taken_ahead(state, node, expression, scope)
        value = await (early if early is not None else evaluation(state, node, rt, expression, scope))
    except Exception as exc:  # SandboxError and friends: the message is the user's answer
        return None, NodeResult.failed(snapshot, [timer.attempt(error=str(exc))], kind="expression", message=str(exc))
    return value, NodeResult.completed(value, snapshot, [timer.attempt(result=value)])


async def run_condition(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """CONDITION: evaluate `condition_expr` in the sandbox, or ask the model (`condition_llm`);
    the output is `{"branch": key}` (`branch_key`)."""
    assert isinstance(node, ConditionNode)
    if node.condition_expr is None:
        return _branch_exists(node, state, await run_llm_condition(node, state, rt))
    value, result = await _evaluate(node, state, rt, node.condition_expr)
    if result.phase == Phase.FAILED:
        return result
    result.output = {"branch": branch_key(value)}
    result.attempts[-1]["result"] = result.output
    return _branch_exists(node, state, result)


def _branch_exists(node: ConditionNode, state: RunState, result: NodeResult) -> NodeResult:
    """A decision that selects none of the node's branches (a typo in a field name, a value
    nobody wrote an edge for) fails the node, unless an edge is the default branch: a run that
    silently skips everything after it ends `completed` with a wrong output."""
    if result.phase != Phase.COMPLETED or not isinstance(result.output, dict):
        return result
    outs = state.compiled.out_edges[node.id]
    keys = sorted({e.condition_key for e in outs if e.condition_key is not None})
    branch = result.output.get("branch")
    if branch in keys or any(e.default for e in outs):
        return result
    shown = json.dumps(branch, ensure_ascii=False)
    return NodeResult.failed(
        result.snapshot, result.attempts, kind="condition_no_branch",
        message=f"the condition's value {shown} is none of its branches' keys ({', '.join(keys) or 'none'})",
        details=[f"add an edge with condition_key: {shown}, or mark one edge `default: true` to take it "
                 "whenever no key matches"],
    )  # fmt: skip


async def run_transform(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """TRANSFORM: evaluate `transform_expr` in the sandbox; its value is the output if it meets the out-edge schemas."""
    assert isinstance(node, TransformNode)
    value, result = await _evaluate(node, state, rt, node.transform_expr)
    if result.phase == Phase.FAILED:
        return result
    return checked_output(node, state, value, result.snapshot, result.attempts)


async def run_merge(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """MERGE: the output maps each active predecessor's id to its output, checked against the out-edge schemas."""
    timer = Timer()
    value = {p: state.nodes[p].data for p in state.active_predecessors(node.id)}
    snapshot = node_snapshot(node, state, {"current": value})
    return checked_output(node, state, value, snapshot, [timer.attempt()])


async def run_human_review(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """Pause here: the value under review is `current`; a person approves or corrects it."""
    assert isinstance(node, HumanReviewNode)
    view = build_view(state, node)
    prompt = await view.arender(node.review_prompt, prompt_budget(node)) if node.review_prompt else None
    snapshot = node_snapshot(
        node, state, view.js_scope, review_prompt=for_the_record(prompt), value=view.names["current"]
    )
    return NodeResult(Phase.WAITING, snapshot=snapshot)


PARK_AFTER_S = 2.0
"""A WAIT due later than this parks the run (no task held) instead of sleeping in it."""


async def run_wait(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """WAIT: once it is due, pass `current` on unchanged as the output. Due within `PARK_AFTER_S`,
    it sleeps; due later, the node waits (parked) and the run pauses until then, holding no task:
    whoever continues the run at its `wake_at` (`plait serve`, the waiting `plait run`,
    `plait resume`) executes the node again, with the same due time."""
    assert isinstance(node, WaitNode)
    timer = Timer()
    due = state.wait_due.get(node.id)
    if due is None:
        found = await _due_time(node, state, rt)
        if isinstance(found, NodeResult):
            return found
        due = state.wait_due[node.id] = found
    left = due - time.time()
    snapshot = node_snapshot(node, state, {}, due_at=due)
    if left > PARK_AFTER_S:
        return NodeResult(Phase.WAITING, snapshot=snapshot)
    await asyncio.sleep(max(0.0, left))
    state.wait_due.pop(node.id, None)
    return NodeResult.completed(state.current_for(node.id), snapshot, [timer.attempt()])


async def _due_time(node: WaitNode, state: RunState, rt: Runtime) -> float | NodeResult:
    """When the WAIT is due (Unix seconds), or the failed result of an `until_expr` that gives no time."""
    if node.delay_s is not None:
        return time.time() + node.delay_s
    if node.until is not None:
        until = node.until if node.until.tzinfo is not None else node.until.replace(tzinfo=UTC)
        return until.timestamp()
    assert node.until_expr is not None
    value, result = await _evaluate(node, state, rt, node.until_expr)
    if result.phase == Phase.FAILED:
        return result
    due = due_from(value)
    if due is None:
        message = f"until_expr gave {value!r}: give an ISO 8601 time with its offset, or Unix seconds"
        return NodeResult.failed(result.snapshot, result.attempts, kind="expression", message=message)
    return due


def due_from(value: Any) -> float | None:
    """A time an `until_expr` gave, as Unix seconds: a number, or an ISO 8601 text (UTC when it
    names no offset); None for anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()
    return None


async def run_llm(node: NodeBase, state: RunState, rt: Runtime) -> NodeResult:
    """LLM_CALL: see `plait.engine.llm_call.run_llm_call`."""
    assert isinstance(node, LlmCallNode)
    return await run_llm_call(node, state, rt)


EXECUTORS: dict[NodeType, Executor] = {
    NodeType.LLM_CALL: run_llm,
    NodeType.CONDITION: run_condition,
    NodeType.MERGE: run_merge,
    NodeType.TRANSFORM: run_transform,
    NodeType.HUMAN_REVIEW: run_human_review,
    NodeType.WAIT: run_wait,
    NodeType.TOOL: repairable(run_tool),  # a failure goes to the node's repair hook, when it has one
    NodeType.CODE: repairable(run_code),
    NodeType.SUBGRAPH: run_subgraph,
    NodeType.MAP: run_map,
    NodeType.LOOP: run_loop,
    NodeType.PARSE: run_parse,
    NodeType.CHUNK: run_chunk,
    NodeType.INDEX: run_index,
    NodeType.RETRIEVE: run_retrieve,
}
SUPPORTED = frozenset(EXECUTORS)
"""The node types this engine executes: those it has an executor for."""
