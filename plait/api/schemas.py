"""Request and response bodies of the REST API: what /openapi.json documents.

Responses are built from the store's records by the small `*_out` functions of
`responses.py`, so every route presents a run, a node run or a graph the same way. Values that are user data
(outputs, inputs, snapshots) are `Any`: their shape is the graph's schemas, not the API's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator
from pydantic_core import PydanticCustomError

from plait.api.outdated import OutdatedOut
from plait.model.enums import DownstreamPolicy
from plait.model.graph import GraphSlug
from plait.model.limits import value_problem

MAX_INT = 2**31 - 1
"""The largest integer a request may carry where the store compares it with a column (versions,
offsets): PostgreSQL's INTEGER, and SQLite refuses Python ints over 64 bits. Bounding it here
makes a larger value a 422 instead of a database error."""

SourceTypeName = Literal["system", "user", "system_fork"]
RunStatusName = Literal["pending", "running", "paused", "completed", "failed", "cancelled"]


VALUE_LIMIT = "value_limit"
"""The error type of a body value Plait cannot store; its `ctx` has `where` and `problem`."""


def storable(data: Any) -> Any:
    """`data` (a request body as parsed), when every value in it can be stored and served back:
    nothing nested deeper than the limit, no lone surrogate, NaN or infinity (Python's JSON
    parser accepts all of these). Else a validation error naming the field (`body.input.text`)."""
    problem = value_problem(data)
    if problem is None:
        return data
    where = problem.location("body")
    raise PydanticCustomError(VALUE_LIMIT, "{where}: {problem}", {"where": where, "problem": problem.message})


class CheckedIn(BaseModel):
    """A request body: unknown fields are refused, and so are values that cannot be stored."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        return storable(data)


_In = CheckedIn


# -- errors ------------------------------------------------------------------------------------------


class ErrorDetail(BaseModel):
    """What went wrong, in the same fields for every error of every route."""

    code: str = Field(description="Stable machine-readable code, e.g. not_found, conflict, graph_invalid.")
    message: str = Field(description="What is wrong.")
    details: list[Any] = Field(description="Specifics: schema errors, graph diagnostics, invalid fields.")
    hint: str | None = Field(default=None, description="How to fix it.")


class ErrorResponse(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


# -- graphs ------------------------------------------------------------------------------------------


BASE_VERSION = (
    "Updates only: the version this edit started from. When the graph has a newer version, nothing is "
    "stored and the answer is 409 `version_conflict` (compare, then save again based on the latest)."
)


class GraphText(_In):
    """A graph as the text of a graph file (YAML or JSON)."""

    source: str = Field(description="The graph file's content.")
    format: Literal["yaml", "json"] = Field(default="yaml", description="How `source` is written.")
    base_version: int | None = Field(default=None, ge=1, le=MAX_INT, description=BASE_VERSION)

    @property
    def content(self) -> str:
        return self.source

    @property
    def as_json(self) -> bool:
        return self.format == "json"


class GraphObject(_In):
    """A graph as a JSON object with the fields of a graph file."""

    graph: dict[str, Any] = Field(description="The graph as an object instead of text.")
    base_version: int | None = Field(default=None, ge=1, le=MAX_INT, description=BASE_VERSION)

    @property
    def content(self) -> dict[str, Any]:
        return self.graph

    @property
    def as_json(self) -> bool:
        return False


def _graph_body_kind(value: Any) -> str | None:
    """Which of the two shapes a body is: decided by its keys, so that a body with both or
    neither gets one clear error instead of one per shape (and the document says `oneOf`)."""
    if isinstance(value, GraphText | GraphObject):
        return "text" if isinstance(value, GraphText) else "object"
    if not isinstance(value, dict) or ("source" in value) == ("graph" in value):
        return None
    return "text" if "source" in value else "object"


GraphSource = Annotated[
    Annotated[GraphText, Tag("text")] | Annotated[GraphObject, Tag("object")],
    Discriminator(
        _graph_body_kind,
        custom_error_type="graph_body",
        custom_error_message="give the graph either as `source` (YAML/JSON text) or as `graph` (an object)",
    ),
]
"""A graph in a request: `{"source": TEXT, "format"}` or `{"graph": {...}}`, exactly one."""


class GraphSummaryOut(BaseModel):
    """A graph as a list shows it: its latest version, without its body."""

    id: str
    slug: str
    name: str
    version: int
    schema_version: str
    source_type: str
    nodes: int
    updated_at: float
    parent_id: str | None
    parent_updated: bool = Field(description="A fork whose parent has a newer version than the one forked.")


class GraphPage(BaseModel):
    """One page of the graph list; `total` counts every graph that matched."""

    items: list[GraphSummaryOut]
    total: int
    offset: int
    limit: int


class PromotionOut(BaseModel):
    """One promotion of a graph's version: what it went through (the gate's set and the verdict of
    its evaluation) or, when forced, the note that overrode it."""

    version: int
    previous_version: int | None = Field(description="The version promoted before (null: the latest ran).")
    evaluation_id: str | None = Field(description="The evaluation that let it through (forced: the one overridden).")
    gate: str | None = Field(description="The evaluation set of that evaluation, NAME@REV.")
    verdict: str | None = Field(description="That evaluation's verdict: pass, fail or inconclusive.")
    forced: bool
    note: str | None
    promoted_by: str
    promoted_at: float


class PromoteIn(CheckedIn):
    """Which version to promote, and through which gate (or forced, with a note saying why)."""

    version: int = Field(ge=1, le=MAX_INT)
    gate: str | None = Field(
        default=None,
        min_length=1,
        max_length=140,
        description="The evaluation set: NAME (newest revision) or NAME@REV.",
    )
    force: bool = Field(default=False, description="Promote even though the gate refuses (needs a `note`).")
    note: str | None = Field(default=None, max_length=2000, description="Why; required with `force`.")


class GraphOut(GraphSummaryOut):
    """One version of a graph, with its body."""

    latest_version: int
    created_at: float
    graph: dict[str, Any] = Field(description="The graph in file-format fields, schema registry included.")
    promoted_version: int | None = Field(
        default=None, description="The version runs use by default (null: none was promoted, the latest runs)."
    )
    promotions: list[PromotionOut] = Field(default_factory=list, description="Every promotion, newest first.")


class SchemaChangeOut(BaseModel):
    """How a save changed one schema of the registry, and the version it got."""

    schema_id: str
    status: str
    level: str
    from_version: str | None
    to_version: str | None
    findings: list[str]


class SavedOut(BaseModel):
    """The version a save stored (or found unchanged), and what changed in its schemas."""

    id: str
    slug: str
    version: int
    schema_version: str
    created: bool = Field(description="False: the content was unchanged, no new version was stored.")
    schema_changes: list[SchemaChangeOut] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class VersionOut(BaseModel):
    """One stored version of a graph."""

    version: int
    schema_version: str
    created_at: float
    runs: int = Field(description="Runs pinned to this version.")


class DeletedOut(BaseModel):
    """A deleted graph; the runs it had stay readable (`runs_kept`)."""

    id: str
    slug: str
    deleted: bool
    runs_kept: int


class ForkIn(_In):
    """How to name a new fork."""

    name: GraphSlug | None = Field(default=None, description="The fork's id (default: <parent>_fork).")


class MergePick(_In):
    """Merge chosen parent changes into the fork."""

    from_parent: list[str] = Field(min_length=1, description="Node ids, or schema:ID / edge:ID / migration:ID.")
    refork: Literal[False] = False


class MergeRefork(_In):
    """Replace the fork by the parent's latest version."""

    refork: Literal[True]
    confirm: Literal[True] = Field(description="Required: the fork's own changes are lost.")


def _merge_kind(value: Any) -> str | None:
    if isinstance(value, MergePick | MergeRefork):
        return "refork" if isinstance(value, MergeRefork) else "pick"
    if not isinstance(value, dict):
        return None
    if value.get("refork") is True:
        return "refork"
    return "pick" if "from_parent" in value else None


MergeIn = Annotated[
    Annotated[MergePick, Tag("pick")] | Annotated[MergeRefork, Tag("refork")],
    Discriminator(
        _merge_kind,
        custom_error_type="merge_body",
        custom_error_message="give from_parent (items to merge) or refork: true with confirm: true",
    ),
]
"""`{"from_parent": [...]}` or `{"refork": true, "confirm": true}`."""


class ForkFieldOut(BaseModel):
    """One field as the parent at fork time, the parent now and the fork now have it."""

    name: str
    base: Any
    parent: Any
    fork: Any
    conflict: bool
    changes: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Of a field holding an object: each path whose value differs, `{path, base, parent, fork}` "
        "(a side without the path is left out).",
    )


class ForkItemOut(BaseModel):
    """One node, edge, schema or migration compared between a fork and its parent."""

    key: str
    kind: str
    id: str
    parent: str
    fork: str
    fields: list[ForkFieldOut]


class ForkDiffOut(BaseModel):
    """A fork compared with its parent: what a merge can take, and what conflicts."""

    fork: str
    fork_version: int
    parent_at_fork: int
    parent_now: int
    parent_moved: bool
    items: list[ForkItemOut]


# -- runs --------------------------------------------------------------------------------------------


class StartIn(_In):
    """What to run, and with which input."""

    graph: str = Field(
        description="A stored graph's id or slug (its promoted version runs, else its latest).", min_length=1
    )
    version: int | None = Field(
        default=None, ge=1, le=MAX_INT, description="A stored version to run instead (default: as `graph` says)."
    )
    input: dict[str, Any] = Field(default_factory=dict, description="The run input (checked against input_schema).")
    stream: bool | Annotated[list[Annotated[str, Field(min_length=1, max_length=200)]], Field(max_length=1000)] = Field(
        default=False,
        description="Node ids (true: every node) whose answers the run's event stream passes on as they arrive "
        "(`node:delta`), besides the nodes the graph marks `stream: true`.",
    )


class RunOut(BaseModel):
    """A run without its input, output and node runs."""

    id: str
    graph_id: str
    graph: str
    graph_version: int
    status: str
    created_at: float
    started_at: float | None
    completed_at: float | None
    tokens_input: int
    tokens_output: int
    cost_usd: float
    execution_s: float = Field(0.0, description="Seconds engines spent executing it (people's time excluded).")
    wake_at: float | None = Field(
        None, description="A run paused by WAIT nodes continues at this time (Unix seconds); null otherwise."
    )
    parent_run_id: str | None = Field(
        None, description="A child run (of a SUBGRAPH, MAP or LOOP node): the run whose node started it."
    )
    parent_node_run_id: str | None = Field(None, description="A child run: the node run it belongs to.")
    child_key: int | None = Field(None, description="A child run: its item or iteration, from 0 (0 for a SUBGRAPH).")
    body: str | None = Field(None, description="A child run of an inline body: the path of node ids to it.")
    corrections: int = Field(0, description="Corrections made to it so far.")
    llm: dict[str, Any] | None = Field(None, description="The model it executes on (never a secret).")
    llm_history: list[dict[str, Any]] = Field(
        default_factory=list, description="Each change of its model: at, by, from, to."
    )
    executing_here: bool = Field(description="This server is executing the run right now.")


class StartedOut(BaseModel):
    """A run just started, and where to read and watch it."""

    run_id: str
    status: str
    run: str = Field(description="Where to read the run.")
    events: str = Field(description="Where to watch it (SSE).")


class RunPage(BaseModel):
    """One page of runs, newest first."""

    items: list[RunOut]
    offset: int
    limit: int
    next_offset: int | None = Field(description="The offset of the next page; null on the last page.")


class NodeRunOut(BaseModel):
    """One activation of one node in a run."""

    id: str
    node_id: str
    activation: int
    current: bool = Field(description="The node's newest activation (older ones are history).")
    status: str
    attempts: list[dict[str, Any]]
    tokens_input: int
    tokens_output: int
    cost_usd: float
    started_at: float | None
    completed_at: float | None
    duration_s: float | None
    effective_output: Any = Field(description="override ?? output, read at today's schema versions unless raw.")
    output: Any
    override: Any
    override_by: str | None
    override_note: str | None
    consumed: dict[str, int] | None
    error: dict[str, Any] | None
    migrated: str | None = Field(default=None, description="The migration steps applied to effective_output.")
    outdated: OutdatedOut | None = Field(
        default=None, description="Set when effective_output is as stored because no migration brings it forward."
    )


class RunDetailOut(RunOut):
    """A run with its input, output, stale nodes and every node run."""

    graph_latest_version: int
    input: dict[str, Any]
    output: Any
    error: dict[str, Any] | None
    stale: list[str] = Field(description="Nodes whose current activation read a value corrected since.")
    nodes: list[NodeRunOut]
    decisions: list[dict[str, Any]] = Field(
        default_factory=list,
        description=(
            "Resource-aware decisions on the run and on its nodes (queued, paused, degraded, rejected, and the "
            "execute that ends a queue), oldest first: run_id, node_id and node_run_id (null for a decision on "
            "the run), action, rule (disk, memory, providers, capacity, cpu), reason, probe, at."
        ),
    )


class NodeRunDetailOut(NodeRunOut):
    """One node run with everything recorded of it, its input snapshot included."""

    run_id: str
    override_at: float | None
    downstream_policy: str | None
    input_snapshot: dict[str, Any] | None = Field(
        description="What the node was given: rendered prompts, tools, response_format, context, model config."
    )


class OverrideIn(_In):
    """A corrected output for a node, and what happens downstream."""

    value: Any = Field(description="The corrected output; it must pass the node's out-edge schemas.")
    policy: DownstreamPolicy = Field(default=DownstreamPolicy.INVALIDATE, description="What happens downstream.")
    note: str | None = Field(default=None, description="Why (kept with the override).")


class RerunIn(_In):
    """Whether a rerun also reruns what follows the node."""

    downstream: bool = Field(default=False, description="Rerun everything after it too (else it becomes stale).")


class ReviewApprove(_In):
    """Accept the value under review as it is."""

    approve: Literal[True]
    note: str | None = Field(default=None, description="Why (kept with the answer).")


class ReviewValue(_In):
    """Replace the value under review by a corrected one (schema-checked)."""

    value: Any = Field(description="The corrected value.")
    approve: Literal[False] = False
    note: str | None = Field(default=None, description="Why (kept with the answer).")


def _review_kind(value: Any) -> str | None:
    if isinstance(value, ReviewApprove | ReviewValue):
        return "approve" if isinstance(value, ReviewApprove) else "value"
    if not isinstance(value, dict):
        return None
    if value.get("approve") is True:
        return "approve" if "value" not in value else None
    return "value" if "value" in value else None


ReviewIn = Annotated[
    Annotated[ReviewApprove, Tag("approve")] | Annotated[ReviewValue, Tag("value")],
    Discriminator(
        _review_kind,
        custom_error_type="review_body",
        custom_error_message="give either approve: true or a corrected value, not both",
    ),
]
"""`{"approve": true}` or `{"value": ...}`."""


class RollbackIn(_In):
    """What to roll back, and to which ledger version."""

    target: str = Field(description="NODE_ID, NODE_ID.FIELD, input or input.FIELD.", min_length=1)
    to_version: int = Field(ge=1, le=MAX_INT, description="The ledger version to restore.")
    cascade: bool = Field(
        False,
        description="Run again what was built from the replaced value, and everything after it, instead of "
        "marking it stale.",
    )


class CorrectionOut(BaseModel):
    """What a correction made stale and queued, and whether the run executes now."""

    run_id: str
    stale: list[str]
    queued: list[str]
    kept: list[str] = Field(
        default_factory=list, description="Under KEEP: the nodes that read the old value and keep what they made."
    )
    executing: bool = Field(description="The run is being driven to execute what the correction queued.")


class RunDiffOut(BaseModel):
    """Two runs compared node by node, as `plait runs diff --json` prints it."""

    a: dict[str, Any]
    b: dict[str, Any]
    same_graph: bool
    same_version: bool
    outputs_equal: bool
    counts: dict[str, int]
    nodes: list[dict[str, Any]]


CheckProblemKind = Literal[
    "stale_read_not_marked",
    "input_mismatch",
    "ledger_mismatch",
    "output_mismatch",
    "inactive_branch_output",
    "active_branch_skipped",
    "child_output_not_gathered",
    "not_settled",
]
"""The kinds of `plait.runs.check.ProblemKind` (docs/corrections.md, "Checking a run")."""


class CheckProblemOut(BaseModel):
    """One inconsistency in a run, and what to do about it."""

    kind: CheckProblemKind
    run_id: str = Field(description="The run it is in: the run checked, or one of its child runs.")
    node_id: str | None = Field(description="The node; null for a problem of the run as a whole.")
    node_run_id: str | None = Field(description="The node's newest activation it concerns.")
    activation: int | None
    message: str = Field(description="What is wrong.")
    hint: str = Field(description="What to do about it.")


class RunCheckOut(BaseModel):
    """Whether a run and its child runs are consistent after their corrections (`plait runs check --json`)."""

    run_id: str
    consistent: bool
    checked: int = Field(description="Node runs checked: each node's newest activation, in the run and its children.")
    problems: list[CheckProblemOut]


# -- system ------------------------------------------------------------------------------------------


class HealthOut(BaseModel):
    """The server is up; what it serves from, and how many runs it executes."""

    status: Literal["ok"]
    version: str
    database: str = Field(description="The store's URL, password hidden.")
    auth_required: bool
    runs_executing: int


class ProviderLoad(BaseModel):
    """One provider's use in this server now, against its limits."""

    id: str
    usable: bool = Field(description="Enabled, with its API key set.")
    in_flight: int = Field(description="Model calls being answered now.")
    queued: int = Field(description="Model calls waiting for one of its `max_concurrency` slots.")
    max_concurrency: int
    requests_last_minute: int
    rpm: int | None
    tokens_last_minute: int
    tpm: int | None


class ResourcesOut(BaseModel):
    """The machine and the pool now, the thresholds in force, and the newest decisions."""

    probe: dict[str, Any] = Field(description="cpu_percent, memory_percent, disk_free_gb, capacity_percent, at.")
    thresholds: dict[str, Any] = Field(description="`[resources]` of plait.toml (or the defaults).")
    decisions: list[dict[str, Any]] = Field(description="The newest resource decisions on runs, newest first.")


class RoleOut(BaseModel):
    """A model role as a model picker shows it: what serves it here, or why nothing can."""

    role: str
    default: bool = Field(description="The role model calls use when a node names none (`chat`).")
    serves: str | None = Field(description="The provider/model its requests go to first; null: none can serve it.")
    refusal: str | None = Field(description="Why no request for the role can be served here; null: it can be.")


class ProvidersOut(BaseModel):
    """Where model calls go, the configuration in use, and each provider's load."""

    provider: str | None = Field(description="What model calls go to: pool, scripted, local; null: none.")
    roles: list[RoleOut] = Field(default_factory=list, description="Every role, the default first.")
    config: dict[str, Any] | None = Field(description="`plait config check --json` of the plait.toml in use.")
    load: list[ProviderLoad] | None = Field(
        default=None, description="Per configured provider, its state in this server now (the provider pool only)."
    )
