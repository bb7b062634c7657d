"""What every executor builds its `NodeResult` from: the input snapshot, the attempt record,
and the check of an output against the node's out-edge schemas."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plait.engine.runtime import NodeResult
from plait.engine.state import RunState
from plait.model.nodes import NodeBase

if TYPE_CHECKING:
    from plait.engine.run_budget import RunBudget


@dataclass
class Timer:
    """One attempt of a node: when it started, and (`attempt`) its record with how long it took."""

    started: float = field(default_factory=time.time)

    def attempt(self, **extra: Any) -> dict[str, Any]:
        return {
            "attempt": 1,
            "started_at": self.started,
            "duration_ms": round((time.time() - self.started) * 1000, 3),
            **extra,
        }


def checked_output(
    node: NodeBase, state: RunState, value: Any, snapshot: dict[str, Any], attempts: list[dict[str, Any]]
) -> NodeResult:
    """Validate against every out-edge schema: invalid data never flows downstream."""
    contract = state.compiled.contracts[node.id]
    problems = contract.violations(value)
    if problems:
        attempts[-1]["violations"] = problems
        return NodeResult.failed(
            snapshot,
            attempts,
            kind="schema",
            message="output violates its out-edge schema",
            details=problems,
            last_output=value,
        )
    return NodeResult.completed(contract.annotate(value), snapshot, attempts)


def node_snapshot(node: NodeBase, state: RunState, scope: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """input_snapshot_json: what the node saw, including the state handed over from its predecessors."""
    return {
        "node_type": str(node.type),
        "state": {
            "current_node_id": node.id,
            "current": scope.get("current"),
            "predecessors": state.active_predecessors(node.id),
        },
        **extra,
    }


def budget_failure(budget: RunBudget) -> NodeResult:
    """The failure of a node stopped by the budget its run's tree reached."""
    result = NodeResult.failed({}, [], kind="budget", message=budget.reached or "the run reached its budget")
    result.error = {**(result.error or {}), "budget": budget.reached_key}
    return result
