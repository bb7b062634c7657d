"""Run state: the run input, every node's effective output, and edge resolution.

The database is the source of truth; `RunState` is rebuilt from the node runs
on start and on resume, then kept current as nodes finish. Readiness is
event-driven: finishing a node resolves its out-edges, and a successor is
decided (run or skip) the moment its last in-edge resolves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from plait.compile.plan import ExecutionPlan, plan_graph
from plait.compile.schema_validator import registry_key, schema_key
from plait.compile.topology import Topology
from plait.engine.contracts import OutputContract, contract_for
from plait.model.graph import END, EdgeDef, GraphDef, SchemaEntry
from plait.model.nodes import NodeBase, NodeType, SkillScope, node_field
from plait.model.output_meta import ROUTED, strip_meta

if TYPE_CHECKING:
    from plait.engine.events import RunPath
    from plait.engine.run_budget import RunBudget


class Phase(StrEnum):
    """Engine-side node phase; `WAITING` is a HUMAN_REVIEW that has not been answered yet."""

    PENDING = "pending"
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    FAILED = "failed"
    SKIPPED = "skipped"


DONE = (Phase.COMPLETED, Phase.SKIPPED)
_UNSETTLED = (Phase.PENDING, Phase.RUNNING, Phase.WAITING)


@dataclass
class NodeState:
    """One node as this engine sees it in one run: its phase, its effective output, its activation.

    Kept in memory only, owned by the `RunState` that holds it, and changed only by the
    scheduler and the take-up of corrections, on the event loop. `phase` is the engine's
    `Phase`, not the stored node status. `output` and `data` keep the last completed value;
    moving to another phase does not clear them, so read them only while `phase` is COMPLETED.
    """

    node: NodeBase
    phase: Phase = Phase.PENDING
    output: Any = None
    """Effective output as stored (objects carry `_schema_id`/`_schema_version`)."""
    data: Any = None
    """The same without the schema meta keys: what templates and expressions see."""
    branch: str | None = None
    """For CONDITION: the key its expression selected."""
    activation: int = 1
    """The node's current activation (a rerun adds one; older ones are history)."""
    read: dict[str, int] | None = None
    """Ledger versions the current activation read when it started (set by the scheduler)."""
    node_run_id: str | None = None
    """The stored node run of the activation executing now (set by the scheduler): what child
    runs of a SUBGRAPH, MAP or LOOP belong to."""
    after: str | None = None
    """Set by a correction arriving while the node runs: end it `stale`, or `rerun` it."""
    routed: dict[str, Any] = field(default_factory=dict)
    """Out-edge id -> the tool result sent down it (LLM_CALL tools with `output_edge_id`)."""


@dataclass(frozen=True, slots=True)
class EdgeSchema:
    """An edge's schema entry, and its text and the graph's registry as validators are keyed."""

    entry: SchemaEntry
    key: str
    registry: str


@dataclass
class CompiledRun:
    """What a run executes: the expanded graph plus indexes, built once per graph version."""

    graph: GraphDef
    plan: ExecutionPlan
    """What the compiler worked out: parsed templates, what each node reads, the topology."""
    scopes: dict[str, SkillScope]
    nodes: dict[str, NodeBase] = field(default_factory=dict)
    in_edges: dict[str, list[EdgeDef]] = field(default_factory=dict)
    out_edges: dict[str, list[EdgeDef]] = field(default_factory=dict)
    contracts: dict[str, OutputContract] = field(default_factory=dict)
    routed_edges: frozenset[str] = frozenset()
    """Out-edges that carry a tool's result rather than their node's answer."""
    output_nodes: list[str] = field(default_factory=list)
    """Whose effective outputs make the run's output: the exit nodes, and nodes with an edge to
    `END` (the virtual exit binds a graph output even on a node with successors)."""
    _bodies: dict[str, CompiledRun] = field(default_factory=dict, repr=False)
    _edge_schemas: dict[str, EdgeSchema | None] = field(default_factory=dict, repr=False)
    """By schema id."""

    def edge_schema(self, edge: EdgeDef) -> EdgeSchema | None:
        """The schema `edge` carries, with the keys its validator is cached by, worked out once
        (None: the edge names no schema the graph declares)."""
        if not edge.schema_id:
            return None
        if edge.schema_id not in self._edge_schemas:
            entry = self.graph.schema_entry(edge.schema_id)
            self._edge_schemas[edge.schema_id] = (
                None
                if entry is None
                else EdgeSchema(entry, schema_key(entry.schema_), registry_key(self.graph.schemas))
            )
        return self._edge_schemas[edge.schema_id]

    def body(self, node_id: str) -> CompiledRun:
        """The inline body of node `node_id` (a SUBGRAPH, MAP or LOOP), compiled once; KeyError
        when the node has none."""
        if node_id not in self._bodies:
            node = self.nodes.get(node_id)
            body = node_field(node, "body", None) if node is not None else None
            if body is None:
                raise KeyError(f"graph '{self.graph.id}' has no node '{node_id}' with a body")
            self._bodies[node_id] = CompiledRun.from_graph(GraphDef.model_validate(body))
        return self._bodies[node_id]

    def at(self, path: str | None) -> CompiledRun:
        """This graph (None) or the inline body at `path` in it (node ids joined by `/`, see
        `RunRecord.body`)."""
        compiled = self
        for node_id in path.split("/") if path else ():
            compiled = compiled.body(node_id)
        return compiled

    @classmethod
    def from_graph(cls, graph: GraphDef) -> CompiledRun:
        """Index a validated, SKILL-expanded graph (as stored for runs) for execution."""
        nodes: dict[str, NodeBase] = {n.id: n for n in graph.nodes}
        plan = plan_graph(graph)
        topology = plan.topology
        scopes = {n.id: n.skill_scope for n in graph.nodes if n.skill_scope is not None}
        compiled = cls(graph, plan, scopes)
        compiled.nodes = nodes
        compiled.in_edges = {n: [] for n in compiled.nodes}
        compiled.out_edges = {n: [] for n in compiled.nodes}
        for edge in graph.edges:
            compiled.out_edges[edge.source_node_id].append(edge)
            if edge.target_node_id != END:
                compiled.in_edges[edge.target_node_id].append(edge)
        to_end = {e.source_node_id for e in graph.edges if e.target_node_id == END}
        exits = set(topology.exits)
        compiled.output_nodes = [n for n in topology.order if n in exits or n in to_end]
        compiled.routed_edges = frozenset(_routed_edges(graph.nodes))
        compiled.contracts = {
            n: contract_for(graph, [e for e in compiled.out_edges[n] if e.id not in compiled.routed_edges])
            for n in compiled.nodes
        }
        return compiled

    @property
    def topology(self) -> Topology:
        return self.plan.topology

    @property
    def aliases(self) -> dict[str, list[str]]:
        return self.plan.aliases

    def downstream(self, roots: Iterable[str]) -> list[str]:
        """Every node reachable after `roots`, in topological order (a root only when another
        root leads to it): what a RERUN_ALL or a correction's dirty marking covers."""
        seen: set[str] = set()
        stack = list(roots)
        while stack:
            for target in self.topology.succs[stack.pop()]:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return [n for n in self.topology.order if n in seen]


@dataclass(frozen=True)
class Ahead:
    """An expression's evaluation started before its node ran (`plait.engine.ahead`): the
    expression, what it was given, the task."""

    expression: str
    scope: dict[str, Any]
    task: asyncio.Future[Any]
    """The evaluation in a process, or the value a plain expression had (a future already done)."""


class RunState:
    """One run as one engine executes it: the input, each node's state, the field-ledger heads
    and the money spent.

    What a caller can rely on:
    - The store is the source of truth: this state is rebuilt from the committed node runs on
      every start and resume (`plait.engine.restore`), so losing it loses nothing committed.
    - It belongs to one run and one scheduler and is changed on one event loop; it is not
      thread-safe.
    - `edge_active`, `decide`, `successors`, `active_predecessors` and the readers below change
      nothing.
    - `outputs()`, `outputs_named()`, `current_for()` and `run_output()` give values without the
      schema meta keys (what templates and expressions see). What they return shares the values
      the state holds (it may be one of them): read it, do not change it.
    """

    def __init__(
        self,
        compiled: CompiledRun,
        run_input: dict[str, Any],
        *,
        run_id: str = "",
        graph_id: str | None = None,
        graph_version: int = 0,
        body: str | None = None,
        root_run_id: str | None = None,
    ):
        self.compiled = compiled
        self.input = run_input
        self.run_id = run_id
        self.root_run_id = root_run_id or run_id
        """The top-level run this one belongs to (itself, unless it is a child run): the owner
        under which the sandbox shares its evaluators, so a run and its children count as one."""
        self.graph_id = graph_id
        """The stored graph the run belongs to (None in a dry run of a file)."""
        self.graph_version = graph_version
        """Its version (0 in a dry run of a file)."""
        self.body = body
        """The inline body this run executes (see `RunRecord.body`); None: the graph itself."""
        self.nodes = {node_id: NodeState(node) for node_id, node in compiled.nodes.items()}
        self._outputs: dict[str, Any] = {}
        """Data of the completed nodes, kept current so that building a node's view stays cheap."""
        self.spent_usd = 0.0
        """Cost of the run's model calls so far (every node run, completed or not)."""
        self.reserved_usd = 0.0
        """Estimated cost of the model calls in flight (against `max_cost_usd`)."""
        self.versions: dict[str, int] = {}
        """Field ledger: the newest version of each owner (`input`, node ids); see engine/ledger.py."""
        self.frozen: dict[str, dict[str, Any]] = {}
        """Field ledger: the frozen fields of each owner's newest version."""
        self.fresh: dict[str, int] = {}
        """Node id -> the activation an explicit rerun queued: its model call skips the response cache."""
        self.wait_due: dict[str, float] = {}
        """WAIT node id -> when it is due (Unix seconds), once computed: a parked WAIT keeps its time."""
        self.ahead: dict[str, Ahead] = {}
        """Node id -> its expression's evaluation started when the node was claimed
        (`plait.engine.ahead`), taken by the node when it runs."""
        self.answered: set[asyncio.Task[Any]] = set()
        """Node tasks holding a model's answer that is not recorded yet: a stopping run lets them
        record it (see `Scheduler._stop`)."""
        self.stopping = False
        """The run is being stopped (Ctrl-C, a pause, a shutdown): no new model call is made."""
        self.path: RunPath = ()
        """For a child run: the nodes above it (`Event.path`)."""
        self.reopened: set[str] = set()
        """Nodes given a new activation (a rerun, a correction's queue, a branch turned) that have
        not settled yet; what runs after them waits for them (`behind_reopened`)."""
        self.budget: RunBudget | None = None
        """What the run's tree has used of its budget (`plait.engine.run_budget`); None: no budget
        (a dry run)."""

    # -- recording -------------------------------------------------------------------------------------------

    def complete(self, node_id: str, output: Any) -> None:
        state = self.nodes[node_id]
        state.phase = Phase.COMPLETED
        state.output = output
        state.data = strip_meta(output)
        state.routed = dict(output.get(ROUTED) or {}) if isinstance(output, dict) else {}
        self._outputs[node_id] = state.data
        if state.node.type == NodeType.CONDITION and isinstance(output, dict):
            state.branch = str(output.get("branch"))

    def set_phase(self, node_id: str, phase: Phase) -> None:
        self.nodes[node_id].phase = phase
        if phase != Phase.COMPLETED:
            self._outputs.pop(node_id, None)

    def reopen(self, node_id: str, activation: int | None = None) -> None:
        """Make the node pending in a new activation (the next one, or `activation`)."""
        node_state = self.nodes[node_id]
        node_state.activation = node_state.activation + 1 if activation is None else activation
        self.set_phase(node_id, Phase.PENDING)
        self.reopened.add(node_id)

    # -- readiness -------------------------------------------------------------------------------------------

    def edge_active(self, edge: EdgeDef) -> bool | None:
        """True: carries data; False: inactive (skipped source or other branch); None: not resolved yet."""
        source = self.nodes[edge.source_node_id]
        if source.phase == Phase.SKIPPED:
            return False
        if source.phase != Phase.COMPLETED:
            return None
        if source.node.type == NodeType.CONDITION:
            if edge.default and edge.condition_key != source.branch:  # taken when no key matches
                return all(e.condition_key != source.branch for e in self.compiled.out_edges[source.node.id])
            return edge.condition_key == source.branch
        if edge.id in self.compiled.routed_edges:
            return edge.id in source.routed  # only when the tool was called
        return True

    def decide(self, node_id: str) -> Phase | None:
        """RUNNING when the node can run now, SKIPPED when every in-edge is inactive, None to keep waiting."""
        edges = self.compiled.in_edges[node_id]
        if not edges:
            return Phase.RUNNING
        states = [self.edge_active(e) for e in edges]
        if any(s is None for s in states):
            return None
        return Phase.RUNNING if any(states) else Phase.SKIPPED

    def must_wait(self, node_id: str) -> bool:
        """Whether a node its in-edges let run must wait all the same, for a node upstream that
        has yet to give the value it would read: one running again (`behind_reopened`), or one
        its definition names (`_named_unsettled`). Neither need be its predecessor, so the
        scheduler plans a waiting node again whenever any node settles."""
        return self.behind_reopened(node_id) or self._named_unsettled(node_id)

    def behind_reopened(self, node_id: str) -> bool:
        """Whether a node upstream of this one runs again and has not settled yet. Its new value
        may reach this node along a path that looks settled (a join whose branch it turns, a
        node it marked stale), so the node waits for it rather than read a value about to be
        replaced: run now, it would have to run again, or be left reading an old version."""
        if not self.reopened:
            return False
        topology = self.compiled.plan.topology
        for owner in list(self.reopened):
            if self.nodes[owner].phase not in _UNSETTLED:
                self.reopened.discard(owner)
            elif topology.is_upstream(owner, node_id):
                return True
        return False

    def _named_unsettled(self, node_id: str) -> bool:
        """Whether a node upstream that the node's definition names (an expression, a template)
        has yet to give its value: it may be reached by no active edge (the path runs through a
        branch not taken, or a node marked stale), and the node must not read the value it is
        about to replace."""
        topology = self.compiled.plan.topology
        for owner in self.compiled.plan.nodes[node_id].reads:
            state = self.nodes.get(owner)
            if state is not None and state.phase in _UNSETTLED and topology.is_upstream(owner, node_id):
                return True
        return False

    def successors(self, node_id: str) -> Iterable[str]:
        seen: set[str] = set()
        for edge in self.compiled.out_edges[node_id]:
            target = edge.target_node_id
            if target != END and target not in seen:
                seen.add(target)
                yield target

    def active_predecessors(self, node_id: str) -> list[str]:
        preds: list[str] = []
        for edge in self.compiled.in_edges[node_id]:
            if self.edge_active(edge) and edge.source_node_id not in preds:
                preds.append(edge.source_node_id)
        return preds

    # -- what a node sees (input, nodes, current) ---------------------------------------------------

    def current_for(self, node_id: str) -> Any:
        values: dict[str, Any] = {}
        for edge in self.compiled.in_edges[node_id]:
            source = edge.source_node_id
            if source not in values and self.edge_active(edge):
                routed = self.nodes[source].routed
                values[source] = routed[edge.id] if edge.id in routed else self.nodes[source].data
        if not values:
            return self.input
        if len(values) == 1:
            return next(iter(values.values()))
        return values

    def outputs(self) -> dict[str, Any]:
        """Data of every completed node, plus SKILL aliases (a SKILL id reads its exit node's output)."""
        out = dict(self._outputs)
        for alias, exits in self.compiled.aliases.items():
            if (value := self._alias_value(exits)) is not None:
                out[alias] = value
        return out

    def _alias_value(self, exits: list[str]) -> Any:
        """A SKILL id's output: its exit node's, or a map by inner id when it has several (None: none done)."""
        done = [e for e in exits if e in self._outputs]
        if not done:
            return None
        return self._outputs[done[0]] if len(exits) == 1 else {e.rsplit("__", 1)[-1]: self._outputs[e] for e in done}

    def outputs_named(self, names: Iterable[str]) -> dict[str, Any]:
        """`outputs()` restricted to `names` (those that have an output), without copying the rest:
        what an expression that names a few nodes is given."""
        out: dict[str, Any] = {}
        for name in names:
            if name in self._outputs:
                out[name] = self._outputs[name]
            elif name in self.compiled.aliases:
                value = self._alias_value(self.compiled.aliases[name])
                if value is not None:
                    out[name] = value
        return out

    def run_output(self) -> Any:
        """Effective output of the output node (an exit, or a node with an edge to END); a map by id
        when there are several (skipped ones left out)."""
        exits = self.compiled.output_nodes
        done = {e: self.nodes[e].data for e in exits if self.nodes[e].phase == Phase.COMPLETED}
        if len(exits) == 1:
            return done.get(exits[0])
        return done

    def phases(self) -> dict[str, Phase]:
        return {n: s.phase for n, s in self.nodes.items()}


def _routed_edges(nodes: Iterable[NodeBase]) -> Iterator[str]:
    """Out-edges that carry a tool's result (`output_edge_id`, MCP `output_edge_map`), not the node's answer."""
    for node in nodes:
        yield from (t.output_edge_id for t in node_field(node, "tools", ()) if t.output_edge_id is not None)
        for server in node_field(node, "mcp_servers", ()):
            yield from server.output_edge_map.values()
