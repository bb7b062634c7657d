"""What the store hands out: frozen snapshots, never live ORM objects.

Immutable records keep callers (the engine, the CLI, the HTTP layer) from believing that
mutating an attribute changes the database; every change goes through a repository method
whose conditions (owner, status) make it safe under concurrency.

Timestamps are Unix seconds as `float` everywhere (sub-second precision orders node runs
that start within the same second); `None` means "not yet".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plait.deprecation import deprecated_alias
from plait.model.enums import NodeStatus, RunStatus

if TYPE_CHECKING:
    from plait.model import GraphDef


@dataclass(frozen=True, slots=True)
class StoredGraph:
    """One version of a stored graph.

    `graph` carries the store-managed fields (`version`, `schema_version`, `created_at`,
    `updated_at`) so that an export of it round-trips. `created_at` is when the graph (slug)
    was first saved, `updated_at` when *this* version was saved. `created` is True only on
    the value returned by the `save` call that stored this version.
    """

    graph_id: str
    slug: str
    version: int
    latest_version: int
    schema_version: str
    source_type: str
    graph: GraphDef
    created: bool
    created_at: float
    updated_at: float
    deleted_at: float | None = None
    """Set when the graph was deleted: its runs stay readable, no new run starts."""

    @property
    def def_id(self) -> str:
        """Deprecated name of `graph_id` (docs/changes.md)."""
        return deprecated_alias("def_id", "graph_id", self.graph_id)


@dataclass(frozen=True, slots=True)
class GraphListing:
    """A live graph as a list shows it: its latest version's facts, read from the graph's row
    alone (the graph itself is not parsed, so listing many graphs stays cheap)."""

    graph_id: str
    slug: str
    name: str
    description: str | None
    version: int
    schema_version: str
    source_type: str
    nodes: int
    """How many nodes the latest version has."""
    created_at: float
    updated_at: float
    """When the latest version was saved."""
    parent_def_id: str | None
    parent_def_ver_at_fork: int | None
    parent_schema_ver_at_fork: str | None

    @property
    def def_id(self) -> str:
        """Deprecated name of `graph_id` (docs/changes.md)."""
        return deprecated_alias("def_id", "graph_id", self.graph_id)


@dataclass(frozen=True, slots=True)
class ChildOf:
    """Where a child run belongs: the parent run, the node run (one activation of the SUBGRAPH,
    MAP or LOOP node) that started it, and its key there (item or iteration, from 0)."""

    run_id: str
    node_run_id: str
    key: int


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One run as the store had it when read: the graph version it is pinned to, which never
    changes, its status, input and output, its lease, and its token and cost totals. A snapshot:
    read the run again to see later changes."""

    id: str
    graph_id: str
    graph_slug: str
    graph_version: int
    schema_version: str
    status: RunStatus
    input: dict[str, Any]
    output: Any
    error: dict[str, Any] | None
    created_at: float
    started_at: float | None
    completed_at: float | None
    updated_at: float
    lease_owner: str | None
    lease_expires_at: float | None
    tokens_input: int
    tokens_output: int
    cost_usd: float
    corrections: int = 0
    """How many corrections the run has had (see `plait.store.corrections`)."""
    llm: dict[str, Any] | None = None
    """The model selection the run executes with (see `plait.runs.model_choice`); None: not recorded."""
    llm_history: tuple[dict[str, Any], ...] = ()
    """Each explicit change of that selection: {"at", "by", "from", "to"}."""
    active_s: float = 0.0
    """Seconds engines spent executing the run (the time people took between executions excluded)."""
    wake_at: float | None = None
    """When a run parked by its WAIT nodes is due to continue (None: it is not waiting for a time)."""
    parent_run_id: str | None = None
    """A child run (of a SUBGRAPH, MAP or LOOP node): the run whose node started it."""
    parent_node_run_id: str | None = None
    """A child run: the node run (one activation of that node) it belongs to."""
    child_key: int | None = None
    """A child run: its item (MAP) or iteration (LOOP), from 0; 0 for a SUBGRAPH."""
    body: str | None = None
    """A child run of an inline body: the path of node ids to it in the graph version (`map1`,
    `outer/inner`); None when the run executes the graph version itself."""
    purpose: str | None = None
    """Why the run exists when no person asked for it: "evaluation" for a run an evaluation made
    (left out of run listings and few-shot pools); None for every other run."""
    options: dict[str, Any] | None = None
    """What the engine is told beside the graph and the input, for an evaluation's run
    (`{"fewshot_exclude": {...}}`: corrections its few-shot pool leaves out); None otherwise."""

    def summary(self) -> dict[str, Any]:
        """The run as `plait runs list --json` and `GET /api/runs` present it."""
        return {
            "id": self.id,
            "graph_id": self.graph_id,
            "graph": self.graph_slug,
            "graph_version": self.graph_version,
            "status": str(self.status),
            "created_at": self.created_at,
            "started_at": self.started_at,
            "completed_at": self.completed_at,
            "tokens_input": self.tokens_input,
            "tokens_output": self.tokens_output,
            "cost_usd": self.cost_usd,
            "execution_s": self.active_s,
            "wake_at": self.wake_at,
            "parent_run_id": self.parent_run_id,
            "parent_node_run_id": self.parent_node_run_id,
            "child_key": self.child_key,
            "body": self.body,
            "corrections": self.corrections,
            "llm": self.llm,
            "llm_history": list(self.llm_history),
        }

    @property
    def def_id(self) -> str:
        """Deprecated name of `graph_id` (docs/changes.md)."""
        return deprecated_alias("def_id", "graph_id", self.graph_id)

    @property
    def graph_def_ver(self) -> int:
        """Deprecated name of `graph_version` (docs/changes.md)."""
        return deprecated_alias("graph_def_ver", "graph_version", self.graph_version)


@dataclass(frozen=True, slots=True)
class NodeRunRecord:
    """One activation of one node in one run. `output` is the raw result and never changes."""

    id: str
    run_id: str
    node_id: str
    activation: int
    status: NodeStatus
    input_snapshot: dict[str, Any] | None
    output: Any
    override: Any
    override_by: str | None
    override_at: float | None
    override_note: str | None
    downstream_policy: str | None
    attempts: list[dict[str, Any]]
    error: dict[str, Any] | None
    tokens_input: int
    tokens_output: int
    cost_usd: float
    owner: str | None
    claims: int
    created_at: float
    started_at: float | None
    completed_at: float | None
    consumed: dict[str, int] | None = None
    """Ledger versions this activation read, by owner (`input` or a node id)."""
    no_cache: bool = False
    """Queued by an explicit rerun: not answered from the response cache."""
    lost: int = 0
    """Executions of this activation lost with their process (it died or hung while executing
    it): a node that keeps taking its process down is not executed again automatically."""

    @property
    def effective_output(self) -> Any:
        """`override ?? output`: the only read path for a node's value."""
        return self.override if self.override is not None else self.output

    def summary(self) -> dict[str, Any]:
        """The node run as `plait runs show --json` and `GET /api/runs/{id}` present it (the
        effective output as stored; readers replace it with the migrated one)."""
        took = (self.completed_at - self.started_at) if self.completed_at and self.started_at else None
        return {
            "id": self.id,
            "node_id": self.node_id,
            "activation": self.activation,
            "status": str(self.status),
            "attempts": self.attempts,
            "tokens_input": self.tokens_input,
            "tokens_output": self.tokens_output,
            "cost_usd": self.cost_usd,
            "started_at": self.started_at,
            "completed_at": self.completed_at,
            "duration_s": took,
            "effective_output": self.effective_output,
            "output": self.output,
            "override": self.override,
            "override_by": self.override_by,
            "override_note": self.override_note,
            "override_at": self.override_at,
            "consumed": self.consumed,
            "error": self.error,
        }


def current_activations(records: Iterable[NodeRunRecord]) -> dict[str, NodeRunRecord]:
    """Per node id, the node run with the highest activation: the node's current result (older
    activations are the history that reruns leave behind)."""
    current: dict[str, NodeRunRecord] = {}
    for record in records:
        held = current.get(record.node_id)
        if held is None or record.activation > held.activation:
            current[record.node_id] = record
    return current


# Built from rows of `plait.store.models` (Core `select()` rows: attribute access by column name).


def run_from_row(row: Any) -> RunRecord:
    """The record of a run row joined with its graph's slug."""
    return RunRecord(
        id=row.id,
        graph_id=row.prompt_graph_def_id,
        graph_slug=row.slug,
        graph_version=row.graph_def_ver,
        schema_version=row.schema_version,
        status=RunStatus(row.status),
        input=row.input_json,
        output=row.output_json,
        error=row.error_json,
        created_at=row.created_at,
        started_at=row.started_at,
        completed_at=row.completed_at,
        updated_at=row.updated_at,
        lease_owner=row.lease_owner,
        lease_expires_at=row.lease_expires_at,
        tokens_input=row.tokens_input,
        tokens_output=row.tokens_output,
        cost_usd=row.cost_usd,
        corrections=row.corrections,
        llm=row.llm_json,
        llm_history=tuple(row.llm_history_json or ()),
        active_s=row.active_s or 0.0,
        wake_at=row.wake_at,
        parent_run_id=row.workflow_run_id,
        parent_node_run_id=row.workflow_node_run_id,
        child_key=row.child_key,
        body=row.body,
        purpose=row.purpose,
        options=row.options_json or None,
    )


def node_run_from_row(row: Any) -> NodeRunRecord:
    """The record of a node run row."""
    return NodeRunRecord(
        id=row.id,
        run_id=row.prompt_graph_run_id,
        node_id=row.node_def_id,
        activation=row.activation,
        status=NodeStatus(row.status),
        input_snapshot=row.input_snapshot_json,
        output=row.output_json,
        override=row.override_json,
        override_by=row.override_by,
        override_at=row.override_at,
        override_note=row.override_note,
        downstream_policy=row.downstream_policy,
        attempts=list(row.attempts_json or []),
        error=row.error_json,
        tokens_input=row.tokens_input,
        tokens_output=row.tokens_output,
        cost_usd=row.cost_usd,
        owner=row.owner,
        claims=row.claims,
        created_at=row.created_at,
        started_at=row.started_at,
        completed_at=row.completed_at,
        consumed=row.consumed_json,
        no_cache=bool(row.no_cache),
        lost=row.lost,
    )


def fresh_claim(params: dict[str, Any]) -> NodeRunRecord:
    """The record of a freshly inserted claim, built without reading it back (positionally, in
    `NodeRunRecord`'s field order: one is built in every node's commit, and keywords cost a third
    more)."""
    return NodeRunRecord(
        params["b_id"],  # id
        params["b_run"],  # run_id
        params["b_node"],  # node_id
        params["b_activation"],  # activation
        NodeStatus.RUNNING,  # status
        None,  # input_snapshot
        None,  # output
        None,  # override
        None,  # override_by
        None,  # override_at
        None,  # override_note
        "INVALIDATE",  # downstream_policy
        [],  # attempts
        None,  # error
        0,  # tokens_input
        0,  # tokens_output
        0.0,  # cost_usd
        params["b_owner"],  # owner
        1,  # claims
        params["b_now"],  # created_at
        params["b_started"],  # started_at
        None,  # completed_at
    )
