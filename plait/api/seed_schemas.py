"""Request and response bodies of the original PromptGraph API's routes (`/PromptGraphDefListRoute`
…), in that API's own field names so that a client written against it reads them unchanged.

The names are that API's data model (PromptGraphDef, SchemaEntry, PromptEdgeDef, PromptNodeRun,
PromptGraphRun): snake_case, `*_json` fields are JSON values (its clients read them as objects:
`effective output = override_json ?: output_json`), timestamps are Unix seconds as integers.
Fields the original API does not have are Plait's additions; each says so.
The `*_out` functions at the bottom build the bodies from the store's records.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator

from plait.api.outdated import OutdatedOut, outdated_out
from plait.api.schemas import CheckedIn
from plait.compile.dump import graph_to_data
from plait.model.enums import DownstreamPolicy
from plait.runs.corrections import Correction
from plait.runs.read import RunView
from plait.store import GraphListing, NodeRunRecord, StoredGraph

PLAIT = "Plait's addition (not in the original API). "
READ_ONLY = "Read-only: returned by PromptGraphDefGetRoute, ignored when sent back."


_In = CheckedIn


def _seconds(value: float | None) -> int | None:
    return None if value is None else int(value)


# -- graph definitions --------------------------------------------------------------------------------


class PromptGraphDefSummary(BaseModel):
    """A PromptGraphDef without its body (nodes, edges, schema registry): a list entry."""

    id: str = Field(description="The graph's UUID (every route also accepts its slug).")
    slug: str = Field(description=PLAIT + "The graph's readable id (`id:` in a graph file).")
    name: str
    description: str | None
    version: int = Field(description="Integer, +1 on every saved change.")
    latest_version: int = Field(description=PLAIT + "The newest version (differs when an older one was asked for).")
    schema_version: str = Field(description="Semantic version of the graph's contract, derived on save.")
    source_type: str = Field(description="system | user | system_fork")
    parent_def_id: str | None = Field(description="The graph a fork was copied from.")
    parent_def_ver_at_fork: int | None
    parent_schema_ver_at_fork: str | None
    parent_updated: bool = Field(description=PLAIT + "A fork whose parent has a newer version to merge.")
    created_at: int = Field(description="Unix seconds.")
    updated_at: int = Field(description="Unix seconds: when this version was saved.")


class PromptGraphDef(PromptGraphDefSummary):
    """One version of a graph with its body, in the original API's field names."""

    nodes: list[dict[str, Any]] = Field(description="PromptNodeDef list; defaults left out.")
    edges: list[dict[str, Any]] = Field(
        description="PromptEdgeDef list: id, source_node_id, target_node_id, condition_key, schema_id, label."
    )
    schema_registry: list[dict[str, Any]] = Field(
        description="SchemaEntry list: id, description, schema, version, breaking_change."
    )
    migrations: list[dict[str, Any]] = Field(
        description="SchemaMigration list: schema_id, from_version, to_version, migrate_expr."
    )
    input_schema: dict[str, Any] | bool | None = Field(
        default=None, description=PLAIT + "JSON Schema of the run input (`true` / `false` are schemas too)."
    )
    input_freeze: Any = Field(default=None, description=PLAIT + "Freeze policy of run input fields.")
    max_cost_usd: float | None = Field(default=None, description=PLAIT + "A run's cost budget.")


class PromptGraphDefPage(BaseModel):
    """One page of the graph list."""

    items: list[PromptGraphDefSummary]
    total: int = Field(description="How many graphs match, over all pages.")
    offset: int
    limit: int


class PromptGraphDefBody(_In):
    """The editable part of a PromptGraphDef. The read-only fields of PromptGraphDefGetRoute's
    answer are accepted so that a client may send back what it read, and are ignored."""

    name: str | None = None
    description: str | None = None
    nodes: list[dict[str, Any]] | None = None
    edges: list[dict[str, Any]] | None = Field(default=None, description="`source`/`target` are accepted too.")
    schema_registry: list[dict[str, Any]] | None = None
    migrations: list[dict[str, Any]] | None = None
    input_schema: dict[str, Any] | bool | None = Field(default=None, description=PLAIT)
    input_freeze: Any = Field(default=None, description=PLAIT)
    max_cost_usd: float | None = Field(default=None, description=PLAIT)
    slug: str | None = Field(default=None, description=READ_ONLY)
    version: int | None = Field(default=None, description=READ_ONLY)
    latest_version: int | None = Field(default=None, description=READ_ONLY)
    schema_version: str | None = Field(default=None, description=READ_ONLY + " It is derived from the schemas.")
    source_type: str | None = Field(default=None, description=READ_ONLY)
    parent_def_id: str | None = Field(default=None, description=READ_ONLY)
    parent_def_ver_at_fork: int | None = Field(default=None, description=READ_ONLY)
    parent_schema_ver_at_fork: str | None = Field(default=None, description=READ_ONLY)
    parent_updated: bool | None = Field(default=None, description=READ_ONLY)
    created_at: int | None = Field(default=None, description=READ_ONLY)
    updated_at: int | None = Field(default=None, description=READ_ONLY)

    def content(self) -> dict[str, Any]:
        """The editable fields that were sent, in graph-file names."""
        names = {"schema_registry": "schemas"}
        editable = (
            "name",
            "description",
            "nodes",
            "edges",
            "schema_registry",
            "migrations",
            "input_schema",
            "input_freeze",
            "max_cost_usd",
        )
        return {names.get(k, k): getattr(self, k) for k in editable if k in self.model_fields_set}


class PromptGraphDefCreateIn(PromptGraphDefBody):
    """A new graph; it is stored as version 1 of a user graph."""

    id: str | None = Field(
        default=None,
        min_length=1,
        description="The new graph's readable id (its slug); default: made from `name`. The answer's `id` is a UUID.",
    )


class PromptGraphDefUpdateIn(PromptGraphDefBody):
    """A new version of graph `id`: fields left out keep their current value."""

    id: str = Field(min_length=1, description="The graph to update: its UUID or slug.")


class PromptGraphDefDeleteIn(_In):
    """The graph to delete; one with runs only with `force`."""

    id: str = Field(min_length=1, description="The graph's UUID or slug.")
    force: bool = Field(default=False, description=PLAIT + "Delete a graph that has runs (they stay readable).")


class PromptGraphDefDeleted(BaseModel):
    """A deleted graph; its runs stay readable."""

    id: str
    slug: str
    deleted: bool
    runs_kept: int = Field(description="Runs of the graph; their pinned versions stay readable.")


class PromptGraphDefForkIn(_In):
    """The graph to fork, and the fork's slug."""

    id: str = Field(min_length=1, description="The graph to fork (a system graph, or any other): UUID or slug.")
    slug: str | None = Field(default=None, min_length=1, description=PLAIT + "The fork's slug (default <parent>_fork).")


# -- runs -------------------------------------------------------------------------------------------------


class PromptGraphRunStartIn(_In):
    """What to run, and with which input."""

    prompt_graph_def_id: str = Field(min_length=1, description="The graph to run (UUID or slug); its latest version.")
    initial_context: dict[str, Any] = Field(
        default_factory=dict, description="The run input, checked against the graph's input_schema."
    )
    material_id: None = Field(default=None, description="Not supported: leave it out (see docs/http.md).")
    workflow_run_id: None = Field(default=None, description="Not supported: leave it out (see docs/http.md).")

    @field_validator("material_id", "workflow_run_id", mode="before")
    @classmethod
    def _unsupported(cls, value: Any) -> None:
        if value is not None:
            raise ValueError(
                "Plait has no materials or workflow runs to link a run to; put the value into initial_context instead"
            )
        return None


class PromptGraphRunStarted(BaseModel):
    """A run just created; it executes in the background."""

    run_id: str
    prompt_graph_def_id: str
    graph_def_ver: int = Field(description="The version the run is pinned to.")
    schema_version: str
    status: str = Field(description="pending: it executes in the background; poll PromptGraphRunGetRoute.")


class PromptNodeRun(BaseModel):
    """The current activation of one node in a run, in the original API's field names."""

    id: str
    prompt_graph_run_id: str
    node_def_id: str
    status: str = Field(description="pending | running | completed | failed | overridden | stale | skipped")
    input_snapshot_json: dict[str, Any] | None = Field(
        description="What the node was given: rendered prompts, tools, response_format, context slice, model config."
    )
    output_json: Any = Field(description="The raw output, never modified.")
    override_json: Any = Field(description="A person's correction; null: none.")
    override_by: str | None
    override_at: int | None
    override_note: str | None
    downstream_policy: str | None
    tokens_input: int
    tokens_output: int
    cost_usd: float
    created_at: int
    completed_at: int | None
    effective_output: Any = Field(
        description="effectiveOutput() = override_json ?: output_json, read at the graph's current schema versions."
    )
    activation: int = Field(description=PLAIT + "1 for the first execution, +1 per rerun.")
    started_at: int | None = Field(description=PLAIT)
    attempts: list[dict[str, Any]] = Field(description=PLAIT + "Each model call: tokens, errors, retries.")
    error: dict[str, Any] | None = Field(description=PLAIT)
    outdated: OutdatedOut | None = Field(
        default=None,
        description=PLAIT + "Set when effective_output is as stored because no migration brings it forward.",
    )


class PromptGraphRun(BaseModel):
    """A run in the original API's field names, with Plait's additions marked."""

    id: str
    prompt_graph_def_id: str
    graph_def_ver: int
    schema_version: str
    workflow_run_id: None = Field(default=None, description="Always null: Plait runs graphs standalone.")
    workflow_node_run_id: None = Field(default=None, description="Always null: Plait runs graphs standalone.")
    material_id: None = Field(default=None, description="Always null (see PromptGraphRunStartRoute).")
    status: str = Field(
        description="pending | running | paused | completed | failed | cancelled (running: executing here now)."
    )
    context_json: dict[str, Any] = Field(description="Node id -> effectiveOutput(), with _schema_id/_schema_version.")
    created_at: int
    completed_at: int | None
    latest_def_ver: int = Field(description=PLAIT + "The graph's newest version (the run stays on graph_def_ver).")
    executing: bool = Field(description=PLAIT + "This server is executing the run right now.")
    input: dict[str, Any] = Field(description=PLAIT + "The run input (initial_context).")
    output: Any = Field(description=PLAIT + "The exit node's effective output (a map by id when several).")
    error: dict[str, Any] | None = Field(description=PLAIT)
    stale: list[str] = Field(description=PLAIT + "Nodes marked stale by a correction (rerun them).")
    started_at: int | None = Field(description=PLAIT)
    tokens_input: int = Field(description=PLAIT)
    tokens_output: int = Field(description=PLAIT)
    cost_usd: float = Field(description=PLAIT)


class PromptGraphRunDetail(BaseModel):
    """A run and the current node run of every node that has started."""

    run: PromptGraphRun
    node_runs: list[PromptNodeRun] = Field(description="The current PromptNodeRun of every node that has started.")


class _NodeIn(_In):
    prompt_graph_run_id: str = Field(min_length=1)
    node_def_id: str = Field(min_length=1)


class PromptGraphNodeOverrideIn(_NodeIn):
    """A corrected output for a node (or the answer to the review the run waits at)."""

    override_json: Any = Field(
        description="The corrected output (not null); it must pass the node's out-edge schemas. For a HUMAN_REVIEW "
        "the run waits at, it is the answer (the value under review unchanged: approved) and the run continues.",
        json_schema_extra={"not": {"type": "null"}},
    )
    override_note: str | None = None
    downstream_policy: DownstreamPolicy = Field(default=DownstreamPolicy.INVALIDATE)
    override_by: None = Field(default=None, description="Set by the server from the caller's token: leave it out.")

    @field_validator("override_json", mode="after")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError(
                "send the corrected output; to undo a correction, roll the node back (POST /api/runs/{id}/rollback)"
            )
        return value

    @field_validator("override_by", mode="before")
    @classmethod
    def _by_server(cls, value: Any) -> None:
        if value is not None:
            raise ValueError("the server records who corrected (api, or api:TOKEN_NAME); leave override_by out")
        return None


class PromptGraphNodeRerunIn(_NodeIn):
    """A node to run again, with or without what follows it."""

    downstream: bool = Field(
        default=True, description="Rerun its downstream too (the original API's semantics); false: they become stale."
    )


class PromptGraphNodeCorrected(BaseModel):
    """What a correction made stale and queued, and the node run it left."""

    prompt_graph_run_id: str
    node_def_id: str
    stale: list[str] = Field(description="Nodes the correction marked stale.")
    queued: list[str] = Field(description="Nodes queued to run (executing in the background).")
    executing: bool = Field(description="The server is executing the run to carry the correction out.")
    review_answered: bool = Field(default=False, description=PLAIT + "The override answered a waiting HUMAN_REVIEW.")
    node_run: PromptNodeRun | None = Field(description="The node's current PromptNodeRun after the correction.")


# -- building responses -----------------------------------------------------------------------------------


def def_summary_fields(g: StoredGraph, parent_updated: bool) -> dict[str, Any]:
    """The `PromptGraphDefSummary` fields of a stored graph version, timestamps in whole seconds."""
    graph = g.graph
    return {
        "id": g.graph_id,
        "slug": g.slug,
        "name": graph.name or g.slug,
        "description": graph.description,
        "version": g.version,
        "latest_version": g.latest_version,
        "schema_version": g.schema_version,
        "source_type": g.source_type,
        "parent_def_id": graph.parent_def_id,
        "parent_def_ver_at_fork": graph.parent_def_ver_at_fork,
        "parent_schema_ver_at_fork": graph.parent_schema_ver_at_fork,
        "parent_updated": parent_updated,
        "created_at": int(g.created_at),
        "updated_at": int(g.updated_at),
    }


def def_listed(g: GraphListing, parent_updated: bool) -> PromptGraphDefSummary:
    """A list entry, from the graph's row alone (the latest version: `latest_version` is it)."""
    return PromptGraphDefSummary(
        id=g.graph_id,
        slug=g.slug,
        name=g.name,
        description=g.description,
        version=g.version,
        latest_version=g.version,
        schema_version=g.schema_version,
        source_type=g.source_type,
        parent_def_id=g.parent_def_id,
        parent_def_ver_at_fork=g.parent_def_ver_at_fork,
        parent_schema_ver_at_fork=g.parent_schema_ver_at_fork,
        parent_updated=parent_updated,
        created_at=int(g.created_at),
        updated_at=int(g.updated_at),
    )


def def_out(g: StoredGraph, parent_updated: bool) -> PromptGraphDef:
    """A stored graph version as the original API returns it."""
    graph = g.graph
    data = graph_to_data(graph)
    return PromptGraphDef(
        **def_summary_fields(g, parent_updated),
        nodes=data.get("nodes", []),
        edges=[e.model_dump(mode="json", exclude_none=True) for e in graph.edges],
        schema_registry=[s.model_dump(mode="json", by_alias=True) for s in graph.schemas],
        migrations=[m.model_dump(mode="json") for m in graph.migrations],
        input_schema=graph.input_schema,
        input_freeze=data.get("input_freeze"),
        max_cost_usd=graph.max_cost_usd,
    )


def node_run_out(n: NodeRunRecord, effective: Any, outdated: Any = None) -> PromptNodeRun:
    """A node run as the original API returns it, with `effective` as its effective output (and the
    notice of `plait.evolve.read` when that is as stored because no migration brings it forward)."""
    return PromptNodeRun(
        id=n.id,
        prompt_graph_run_id=n.run_id,
        node_def_id=n.node_id,
        status=str(n.status),
        input_snapshot_json=n.input_snapshot,
        output_json=n.output,
        override_json=n.override,
        override_by=n.override_by,
        override_at=_seconds(n.override_at),
        override_note=n.override_note,
        downstream_policy=n.downstream_policy,
        tokens_input=n.tokens_input,
        tokens_output=n.tokens_output,
        cost_usd=n.cost_usd,
        created_at=int(n.created_at),
        completed_at=_seconds(n.completed_at),
        effective_output=effective,
        activation=n.activation,
        started_at=_seconds(n.started_at),
        attempts=n.attempts,
        error=n.error,
        outdated=outdated_out(outdated),
    )


def run_detail_out(view: RunView, executing: bool) -> PromptGraphRunDetail:
    """A run as the original API returns it; `running` while this server executes it."""
    r = view.run
    values = view.outputs.values
    current = list(view.current.values())
    run = PromptGraphRun(
        id=r.id,
        prompt_graph_def_id=r.graph_id,
        graph_def_ver=r.graph_version,
        schema_version=r.schema_version,
        status="running" if executing else str(r.status),
        context_json={n.node_id: values[n.id] for n in current if values[n.id] is not None},
        created_at=int(r.created_at),
        completed_at=_seconds(r.completed_at),
        latest_def_ver=view.latest_version,
        executing=executing,
        input=r.input,
        output=r.output,
        error=r.error,
        stale=view.stale,
        started_at=_seconds(r.started_at),
        tokens_input=r.tokens_input,
        tokens_output=r.tokens_output,
        cost_usd=r.cost_usd,
    )
    notices = view.outputs.outdated
    return PromptGraphRunDetail(run=run, node_runs=[node_run_out(n, values[n.id], notices.get(n.id)) for n in current])


def corrected_out(
    result: Correction, node_id: str, node_run: PromptNodeRun | None, executing: bool, *, review: bool = False
) -> PromptGraphNodeCorrected:
    """The answer to an override or a rerun; `review`: it answered a waiting HUMAN_REVIEW."""
    return PromptGraphNodeCorrected(
        prompt_graph_run_id=result.run_id,
        node_def_id=node_id,
        stale=result.stale,
        queued=result.queued,
        executing=executing,
        review_answered=review,
        node_run=node_run,
    )
