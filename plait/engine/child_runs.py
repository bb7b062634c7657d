"""Child runs: the runs SUBGRAPH, MAP and LOOP nodes start, linked to the node run they belong to.

A child is a full run (listed with `--children`, resumable, correctable) of a stored graph or
of an inline body of the parent's graph version (`RunRecord.body`). Each belongs to one node
run (one activation of the node) under a key: the item or iteration, from 0; 0 for a SUBGRAPH.
The key is unique per node run, so a node executed again after a crash or a pause finds its
children where they are: a finished child is not run again, an unfinished one is continued.

Which graph a child runs is decided once per node run: a body of the graph version, a stored
graph at its pinned `graph_version`, or the version the graph runs by default (its promoted
version, else its newest: `run_input.stored_graph`) when the node first started (the version
of its first child, on resume). A stored graph that is among the run's ancestors is a
cycle, and children nest at most `MAX_CHILD_DEPTH` deep: both fail the node, not the engine.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

from plait.engine.contracts import schema_violations
from plait.engine.events import RunPath
from plait.engine.outcome import EngineError, RunOutcome
from plait.engine.ports import ChildGraph, RunDriver
from plait.engine.run_budget import shared
from plait.engine.run_input import GraphResolver, StartError
from plait.engine.spread import ANNOUNCE, Spread, await_child
from plait.engine.state import RunState
from plait.model.enums import RunStatus
from plait.model.limits import MAX_DEPTH, value_problem
from plait.model.nodes import NodeBase, NodeType, node_field
from plait.store import ChildExists, ChildOf, RunRecord, Store, StoreError

MAX_CHILD_DEPTH = 5
"""How deeply child runs nest (a child of a child...): the compiler's limit for bodies too."""

_inside_parent: contextvars.ContextVar[bool] = contextvars.ContextVar("plait_inside_parent", default=False)
_root_run: contextvars.ContextVar[str | None] = contextvars.ContextVar("plait_root_run", default=None)
_path: contextvars.ContextVar[RunPath] = contextvars.ContextVar("plait_run_path", default=())


class ChildGraphError(Exception):
    """The node cannot start its children (missing graph, cycle, too deep, input refused); the
    message says what to fix."""

    def __init__(self, message: str, kind: str = "child_graph"):
        super().__init__(message)
        self.kind = kind


def driven_by_parent() -> bool:
    """Whether the code running now is a parent's node driving its child (so the engine does
    not, when the child ends, continue the parent that is already waiting for it)."""
    return _inside_parent.get()


def driving_root() -> str | None:
    """The root run of the parent whose node is driving a child now (None: no parent is)."""
    return _root_run.get()


def driving_path() -> RunPath:
    """The path of the child a parent's node is driving now (see `Event.path`; empty: none)."""
    return _path.get()


def root_of(store: Store, record: RunRecord) -> str:
    """The top-level run `record` belongs to: itself, else known from the parent driving it,
    else read up its chain of parents (a child continued on its own)."""
    if record.parent_run_id is None:
        return record.id
    root = driving_root() if driven_by_parent() else None
    run_id = record.parent_run_id
    for _ in range(MAX_CHILD_DEPTH + 1):
        if root is not None:
            return root
        parent = store.runs.get(run_id).parent_run_id
        if parent is None:
            return run_id
        run_id = parent
    return run_id


def path_of(store: Store, record: RunRecord) -> RunPath:
    """The nodes above a child run (`Event.path`): known from the parent driving it, else
    read up its chain of parents (a child continued on its own)."""
    if record.parent_run_id is None:
        return ()
    if driven_by_parent():
        return driving_path()
    path: list[tuple[str, str]] = []
    run: RunRecord | None = record
    while run is not None and run.parent_run_id is not None and run.parent_node_run_id is not None:
        path.insert(0, (run.parent_run_id, store.runs.node_run(run.parent_node_run_id).node_id))
        run = store.runs.get(run.parent_run_id) if len(path) <= MAX_CHILD_DEPTH else None
    return tuple(path)


@contextlib.contextmanager
def _as_child(root_run_id: str, path: RunPath) -> Iterator[None]:
    token = _inside_parent.set(True)
    root = _root_run.set(root_run_id)
    where = _path.set(path)
    try:
        yield
    finally:
        _path.reset(where)
        _root_run.reset(root)
        _inside_parent.reset(token)


class ChildRuns:
    """An engine's child runs: which graph a node's children run, and driving one to its end (a
    `ChildRunner`). `engine` drives them; `spread`: MAP items are announced to the workers;
    `llm`: the model selection recorded on the child runs it writes itself."""

    def __init__(self, engine: RunDriver, graphs: GraphResolver, *, spread: Spread | None, llm: dict[str, Any] | None):
        self.engine = engine
        self.store: Store = engine.store
        self.graphs = graphs
        self.spread = spread
        self.llm = llm

    # -- which graph -------------------------------------------------------------------------------------------

    def target(self, state: RunState, node: NodeBase) -> ChildGraph:
        """The graph `node`'s children run in this activation; ChildGraphError when there is none
        it may run."""
        ancestors = self._ancestors(state)
        if len(ancestors) >= MAX_CHILD_DEPTH:
            raise ChildGraphError(
                f"child runs nest deeper than {MAX_CHILD_DEPTH} levels (run {state.run_id} is at depth "
                f"{len(ancestors)}); flatten the graphs",
                kind="depth",
            )
        if node_field(node, "body", None) is not None:
            if not state.graph_id:
                raise ChildGraphError("an inline body runs only in a run of a stored graph")
            path = node.id if state.body is None else f"{state.body}/{node.id}"
            stored = self.store.graphs.get(state.graph_id, state.graph_version)
            compiled = self.engine.compiled_for(state.graph_id, state.graph_version, path)
            slug = compiled.graph.id  # the graph file's id, or `<graph>.<node>` for an inline body
            return ChildGraph(state.graph_id, state.graph_version, stored.schema_version, slug, path, compiled)
        ref = str(node_field(node, "graph", ""))
        stored_graph = self._stored(state, node, ref)
        if any(graph_id == stored_graph.graph_id and body is None for graph_id, body in ancestors):
            trail = " → ".join([*(self._slug(g) for g, _ in reversed(ancestors)), stored_graph.slug])
            raise ChildGraphError(f"graphs run each other in a cycle: {trail}", kind="cycle")
        compiled = self.engine.compiled_for(stored_graph.graph_id, stored_graph.version)
        return ChildGraph(
            stored_graph.graph_id, stored_graph.version, stored_graph.schema_version, stored_graph.slug, None, compiled
        )

    def _stored(self, state: RunState, node: NodeBase, ref: str) -> Any:
        pinned = node_field(node, "graph_version", None)
        node_run_id = state.nodes[node.id].node_run_id
        first = self.store.runs.child(node_run_id, 0) if node_run_id else None
        try:
            if first is not None:  # resumed: the version its children already run
                return self.store.graphs.get(first.graph_id, first.graph_version)
            if pinned is not None:
                return self.store.graphs.get(ref, int(pinned))
            return self.graphs(ref)
        except (StoreError, StartError) as exc:  # not stored, or deleted: the reason is in the message
            version = f" version {pinned}" if pinned else ""
            raise ChildGraphError(
                f"node '{node.id}' runs the graph '{ref}'{version}, which is not stored ({exc}); store it first "
                "(`plait graphs import FILE`) or name a graph file",
                kind="not_found",
            ) from None

    def _ancestors(self, state: RunState) -> list[tuple[str, str | None]]:
        """(graph id, body) of this run and each run above it, nearest first."""
        chain: list[tuple[str, str | None]] = []
        run_id: str | None = state.run_id
        while run_id and len(chain) <= MAX_CHILD_DEPTH:
            record = self.store.runs.get(run_id)
            chain.append((record.graph_id, record.body))
            run_id = record.parent_run_id
        return chain

    def _slug(self, graph_id: str) -> str:
        try:
            return self.store.graphs.get(graph_id).slug
        except StoreError:
            return graph_id

    # -- driving a child ---------------------------------------------------------------------------------------

    def outcomes(self, state: RunState, node: NodeBase) -> dict[int, tuple[str, RunStatus, Any]]:
        """Key -> (run id, status, output) of the children this activation has already."""
        node_run_id = state.nodes[node.id].node_run_id
        return self.store.runs.child_outcomes(node_run_id) if node_run_id else {}

    async def run(
        self,
        state: RunState,
        node: NodeBase,
        target: ChildGraph,
        key: int,
        run_input: Any,
        existing: str | None = None,
    ) -> tuple[RunOutcome, RunRecord | None]:
        """Drive child `key` of this activation of `node` to its end (or its pause): continued
        where it is when it exists (`existing`, its id from `outcomes`), else started with
        `run_input`. Returns its outcome, and for a paused child its record (its `wake_at`).
        ChildGraphError when `run_input` is refused; BudgetExceeded when the run may start no
        more child runs. The child counts against the run's budget (`state.budget`)."""
        node_run_id = state.nodes[node.id].node_run_id
        if not node_run_id:
            raise EngineError(f"node '{node.id}' has no node run to attach its child runs to")
        spread = self.spread if node.type == NodeType.MAP else None
        child = ChildOf(state.run_id, node_run_id, key)
        with _as_child(state.root_run_id, (*state.path, (state.run_id, node.id))), shared(state.budget):
            if existing is None:
                self._check_input(target, run_input, node, key)
                if state.budget is not None:
                    state.budget.start_child()
                try:
                    if spread is not None:
                        announced = self._announce(spread, target, run_input, child)
                        outcome = await await_child(self.engine, spread, announced)
                    else:
                        outcome = await self.engine.start_child(target, run_input, child)
                    return outcome, self._paused(outcome)
                except ChildExists:  # another engine started it a moment ago: continue that one
                    found = self.store.runs.child(node_run_id, key)
                    assert found is not None
                    existing = found.id
            try:
                outcome = await self.engine.run(existing)  # an ended child: its stored outcome
            except EngineError:
                if spread is None:
                    raise
                outcome = await await_child(self.engine, spread, existing)  # another worker executes it
            return outcome, self._paused(outcome)

    def _announce(self, spread: Spread, target: ChildGraph, run_input: dict[str, Any], child: ChildOf) -> str:
        """Write the child run pending, its message to the workers in the same transaction."""
        run_id = self.store.runs.add(graph_id=target.graph_id, graph_version=target.version,
                                     schema_version=target.schema_version, input=run_input, llm=self.llm,
                                     child=child, body=target.body, announce=ANNOUNCE)  # fmt: skip
        spread.nudge()
        return run_id

    def spent(self, state: RunState, node: NodeBase) -> tuple[int, int, float]:
        """Input tokens, output tokens and cost this activation's children spent: a node's totals
        (and its run's, and the run's budget after it) include them."""
        node_run_id = state.nodes[node.id].node_run_id
        return self.store.runs.child_totals(node_run_id) if node_run_id else (0, 0, 0.0)

    def failure(self, outcome: RunOutcome) -> str:
        """Why a child failed, in the words of the node that failed in it."""
        error = outcome.error or {}
        node_id = error.get("node_id")
        if error.get("kind") != "node_failed" or not node_id:
            return str(error.get("message") or "")
        failed = [r for r in self.store.runs.node_runs(outcome.run_id) if r.node_id == node_id and r.error]
        detail = failed[-1].error.get("message") if failed and failed[-1].error else None
        return f"node '{node_id}' failed: {detail}" if detail else str(error.get("message") or "")

    def _paused(self, outcome: RunOutcome) -> RunRecord | None:
        return self.store.runs.get(outcome.run_id) if outcome.status == RunStatus.PAUSED else None

    def _check_input(self, target: ChildGraph, run_input: Any, node: NodeBase, key: int) -> None:
        where = f"node '{node.id}', child {key}"
        if not isinstance(run_input, dict):
            raise ChildGraphError(
                f"{where}: a child run's input must be an object, not {type(run_input).__name__}; map it with `inputs`",
                kind="input",
            )
        problem = value_problem(run_input)
        if problem is not None:
            raise ChildGraphError(
                f"{where}: the input cannot be stored: {problem.describe('input')} (at most {MAX_DEPTH} levels)",
                kind="input",
            )
        graph = target.compiled.graph
        if graph.input_schema is not None:
            problems = schema_violations(graph.input_schema, run_input, graph.schemas)
            if problems:
                raise ChildGraphError(
                    f"{where}: the input does not match the input_schema of '{target.slug}': {'; '.join(problems[:5])}",
                    kind="input",
                )
