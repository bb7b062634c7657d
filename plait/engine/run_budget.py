"""The budget of a run: child runs, node runs and stored bytes, counted over the run and every
child run under it (its tree), against `[runs]` of plait.toml.

Static bounds refuse a graph that could pass the budget before it runs (`plait.compile.run_bounds`);
this is the run-time side, for what no bound can foresee (a MAP over a list without `maxItems`, a
graph stored after the check). An engine keeps one `RunBudget` per tree it drives: a child run its
parent's node drives shares its parent's (`shared`); a run begun any other way (resumed, continued
on its own, executed by another worker) starts from what the store holds for its tree, so the
counts survive restarts. Engines on several workers each count from the store when they begin a
run of the tree, so there the total may pass the budget by what they execute at once.

Reaching the budget fails what was about to happen: the child run not started, the node not
executed, the result not stored; the node fails with kind `budget`, naming the budget, and so
does its run and every run above it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plait.config import RunsConfig

if TYPE_CHECKING:
    from plait.store import RunRecord, Store


class BudgetExceeded(Exception):
    """The run reached one of its budgets; the message names it."""


@dataclass
class RunBudget:
    """What a run tree has used of its budget. Changed on the engine's event loop only."""

    limits: RunsConfig
    child_runs: int = 0
    node_runs: int = 0
    stored_bytes: int = 0
    reached: str | None = None
    """The budget the tree reached (a message naming it), once it has: nothing more is done."""
    reached_key: str | None = None
    """Its key in `[runs]` (`max_child_runs`, ...)."""

    def _over(self, used: int, limit: int, what: str, key: str) -> str | None:
        if used > limit and self.reached is None:
            self.reached_key = key
            self.reached = (
                f"the run reached its budget of {limit:,} {what} (its child runs included); the deployer sets it "
                f"with [runs] {key} in plait.toml"
            )
        return self.reached

    def start_child(self) -> None:
        """Count a child run about to start; BudgetExceeded when the tree may start no more."""
        if self.reached is None:
            self.child_runs += 1
            self._over(self.child_runs, self.limits.max_child_runs, "child runs", "max_child_runs")
        if self.reached is not None:
            raise BudgetExceeded(self.reached)

    def execute_node(self) -> str | None:
        """Count a node activation about to execute; the budget reached, if it was."""
        if self.reached is None:
            self.node_runs += 1
            self._over(self.node_runs, self.limits.max_node_runs, "node runs", "max_node_runs")
        return self.reached

    def store(self, size: int) -> str | None:
        """Count `size` bytes of records about to be stored; the budget reached, if it was."""
        if self.reached is None:
            self.stored_bytes += size
            self._over(self.stored_bytes, self.limits.max_stored_bytes, "stored bytes", "max_stored_bytes")
        return self.reached


_shared: ContextVar[RunBudget | None] = ContextVar("plait_run_budget", default=None)


@contextlib.contextmanager
def shared(budget: RunBudget | None) -> Iterator[None]:
    """Inside: runs started or continued (by a parent's node driving its children) count against `budget`."""
    token = _shared.set(budget)
    try:
        yield
    finally:
        _shared.reset(token)


def budget_for(store: Store, record: RunRecord | None, limits: RunsConfig) -> RunBudget:
    """The budget a run counts against: its parent's when its parent's node drives it, a fresh one
    for a new top-level run (`record` None or never started), else its tree's usage as stored."""
    inherited = _shared.get()
    if inherited is not None:
        return inherited
    if record is None or (record.started_at is None and record.parent_run_id is None):
        return RunBudget(limits)
    root = record
    for _ in range(16):  # child runs nest a few levels at most
        if root.parent_run_id is None:
            break
        root = store.runs.get(root.parent_run_id)
    child_runs, node_runs, stored_bytes = store.runs.tree_usage(root.id)
    return RunBudget(limits, child_runs, node_runs, stored_bytes)


def budget_of(error: dict[str, Any] | None) -> tuple[str, str] | None:
    """(key, message) of the run budget a failed run or node reached, from its error (None: it
    failed otherwise, `max_cost_usd` included)."""
    if error and error.get("kind") == "budget" and error.get("budget"):
        return str(error["budget"]), str(error.get("message", ""))
    return None
