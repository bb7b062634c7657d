"""SQLAlchemy 2 declarative models of the store's tables (seed 000 §8, SPEC §9).

The models are the typed description the repositories query through; the tables themselves
are created only by the Alembic migrations in `plait/store/migrations/versions/` (a test
checks that the two agree). Change a model → add a migration.

Conventions:
- ids are UUID4 strings (`TEXT`), so a graph can be referred to by id or slug in one column type;
- timestamps are Unix seconds as double precision (see `records.py`);
- JSON columns are `JSON` (TEXT on SQLite, `json` on PostgreSQL: key order preserved, see
  `Json`); Python `None` is SQL `NULL` (`none_as_null`), so "no override" and "no output" are
  real NULLs, not JSON `null`;
- statuses are plain strings, not database enums: adding a status must not need a type migration.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Double,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeEngine

Json: TypeEngine[Any] = JSON(none_as_null=True)
"""`json` on PostgreSQL too, not `jsonb`: jsonb reorders object keys, and key order is meaning
here. A JSON Schema's property order is the order a model generates fields in (`response_format`),
and objects rendered into prompts must read back exactly as written, or a resumed run (state
rebuilt from the store) would send different prompts than the run that was interrupted, and
SQLite and PostgreSQL would behave differently. (An expression index on `col::jsonb` can
still serve queries later.)"""
Id = String(36)


class Base(DeclarativeBase):
    pass


class GraphDefRow(Base):
    """A graph (one slug) and a denormalised copy of its latest version, as seed 000 §8 lays it out."""

    __tablename__ = "prompt_graph_def"

    id: Mapped[str] = mapped_column(Id, primary_key=True)
    slug: Mapped[str] = mapped_column(String(128))
    name: Mapped[str] = mapped_column(Text)
    description: Mapped[str | None] = mapped_column(Text)
    nodes_json: Mapped[Any] = mapped_column(Json, nullable=False, server_default=text("'[]'"))
    edges_json: Mapped[Any] = mapped_column(Json, nullable=False, server_default=text("'[]'"))
    schema_registry_json: Mapped[Any] = mapped_column(Json, nullable=False, server_default=text("'[]'"))
    migrations_json: Mapped[Any] = mapped_column(Json, nullable=False, server_default=text("'[]'"))
    version: Mapped[int] = mapped_column(Integer, server_default=text("1"))
    schema_version: Mapped[str] = mapped_column(String(32), server_default=text("'1.0.0'"))
    source_type: Mapped[str] = mapped_column(String(16), server_default=text("'user'"))
    parent_def_id: Mapped[str | None] = mapped_column(Id)
    parent_def_ver_at_fork: Mapped[int | None] = mapped_column(Integer)
    parent_schema_ver_at_fork: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[float] = mapped_column(Double)
    updated_at: Mapped[float] = mapped_column(Double)
    deleted_at: Mapped[float | None] = mapped_column(Double)

    __table_args__ = (
        Index("idx_pgd_source", "source_type"),
        # A slug names one live graph; a deleted graph frees its slug but keeps its rows for old runs.
        Index(
            "uq_pgd_slug_live",
            "slug",
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        ),
    )


class GraphDefVersionRow(Base):
    """One immutable saved version of a graph (SPEC §5: old versions stay readable)."""

    __tablename__ = "prompt_graph_def_version"

    def_id: Mapped[str] = mapped_column(Id, ForeignKey("prompt_graph_def.id", ondelete="CASCADE"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    content_json: Mapped[Any] = mapped_column(Json, nullable=False)
    content_hash: Mapped[str] = mapped_column(String(64))
    schema_version: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[float] = mapped_column(Double)


class GraphRunRow(Base):
    """A run, pinned to the graph version it started with (seed 000 §6.2)."""

    __tablename__ = "prompt_graph_run"

    id: Mapped[str] = mapped_column(Id, primary_key=True)
    prompt_graph_def_id: Mapped[str] = mapped_column(Id)
    graph_def_ver: Mapped[int] = mapped_column(Integer)
    schema_version: Mapped[str] = mapped_column(String(32))
    workflow_run_id: Mapped[str | None] = mapped_column(Text)
    workflow_node_run_id: Mapped[str | None] = mapped_column(Text)
    material_id: Mapped[str | None] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), server_default=text("'pending'"))
    input_json: Mapped[Any] = mapped_column(Json, nullable=False)
    context_json: Mapped[Any] = mapped_column(Json, nullable=False, server_default=text("'{}'"))
    """Kept for seed 000 compatibility; the engine rebuilds context from node runs."""
    output_json: Mapped[Any] = mapped_column(Json, nullable=True)
    error_json: Mapped[Any] = mapped_column(Json, nullable=True)
    lease_owner: Mapped[str | None] = mapped_column(Text)
    lease_expires_at: Mapped[float | None] = mapped_column(Double)
    tokens_input: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    tokens_output: Mapped[int] = mapped_column(BigInteger, server_default=text("0"))
    cost_usd: Mapped[float] = mapped_column(Double, server_default=text("0"))
    created_at: Mapped[float] = mapped_column(Double)
    started_at: Mapped[float | None] = mapped_column(Double)
    completed_at: Mapped[float | None] = mapped_column(Double)
    updated_at: Mapped[float] = mapped_column(Double)
    corrections: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    """Corrections made so far: an engine executing the run compares it at every commit."""
    llm_json: Mapped[Any] = mapped_column(Json, nullable=True)
    """The model selection the run executes with (an `--llm` spec, or a plait.toml path and its
    roles; never a secret): later executions of the run reuse it."""
    llm_history_json: Mapped[Any] = mapped_column(Json, nullable=False, server_default=text("'[]'"))
    """Each explicit change of the run's model: {"at", "by", "from", "to"}."""
    active_s: Mapped[float] = mapped_column(Double, server_default=text("0"))
    """Seconds engines spent executing the run, summed over its executions: the time a person
    took between them (a review, a correction) is not in it, unlike `completed_at - started_at`."""

    __table_args__ = (
        ForeignKeyConstraint(
            ["prompt_graph_def_id", "graph_def_ver"],
            ["prompt_graph_def_version.def_id", "prompt_graph_def_version.version"],
            name="fk_pgr_def_version",
        ),
        Index("idx_pgr_def", "prompt_graph_def_id"),
        Index("idx_pgr_wf_run", "workflow_run_id"),
        Index("idx_pgr_status", "status"),
        Index("idx_pgr_created", "created_at"),
    )


class NodeRunRow(Base):
    """One activation of a node in a run; `UNIQUE(run, node, activation)` is the idempotency guard."""

    __tablename__ = "prompt_node_run"

    id: Mapped[str] = mapped_column(Id, primary_key=True)
    prompt_graph_run_id: Mapped[str] = mapped_column(Id, ForeignKey("prompt_graph_run.id", ondelete="CASCADE"))
    node_def_id: Mapped[str] = mapped_column(Text)
    activation: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    status: Mapped[str] = mapped_column(String(16), server_default=text("'pending'"))
    input_snapshot_json: Mapped[Any] = mapped_column(Json, nullable=True)
    output_json: Mapped[Any] = mapped_column(Json, nullable=True)
    override_json: Mapped[Any] = mapped_column(Json, nullable=True)
    override_by: Mapped[str | None] = mapped_column(Text)
    override_at: Mapped[float | None] = mapped_column(Double)
    override_note: Mapped[str | None] = mapped_column(Text)
    downstream_policy: Mapped[str | None] = mapped_column(String(16), server_default=text("'INVALIDATE'"))
    attempts_json: Mapped[Any] = mapped_column(Json, nullable=False, server_default=text("'[]'"))
    error_json: Mapped[Any] = mapped_column(Json, nullable=True)
    tokens_input: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    tokens_output: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    cost_usd: Mapped[float] = mapped_column(Double, server_default=text("0"))
    owner: Mapped[str | None] = mapped_column(Text)
    claims: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    created_at: Mapped[float] = mapped_column(Double)
    started_at: Mapped[float | None] = mapped_column(Double)
    completed_at: Mapped[float | None] = mapped_column(Double)
    consumed_json: Mapped[Any] = mapped_column(Json, nullable=True)
    """Ledger versions this activation read: {"input": 1, "<node id>": 3} (see FieldVersionRow)."""
    no_cache: Mapped[bool] = mapped_column(Boolean, server_default=false())
    """Queued by an explicit rerun: its model call must not be answered from the response cache."""

    __table_args__ = (
        UniqueConstraint("prompt_graph_run_id", "node_def_id", "activation", name="uq_pnr_run_node_activation"),
        Index("idx_pnr_run", "prompt_graph_run_id"),
    )


class LlmCacheRow(Base):
    """Validated model answers by request hash (SPEC §6.4): an identical later request (same
    provider and model, messages, tools, response_format, temperature, seed) is answered from
    here at no cost. Written with the node run that produced the answer, in its commit."""

    __tablename__ = "llm_response_cache"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    provider: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(Text)
    response_json: Mapped[Any] = mapped_column(Json, nullable=False)
    node_run_id: Mapped[str | None] = mapped_column(Id)
    """The node run whose call produced the answer (recorded on every hit)."""
    created_at: Mapped[float] = mapped_column(Double)


class FieldVersionRow(Base):
    """One write to a value of a run (SPEC §4 field ledger, seed 003 §3.1, §4.3).

    The unit is a whole *owner*: `input` (the run input) or a node id (that node's effective
    output). Every write (an execution, an override, a review, a rollback, a freeze) appends
    version n + 1 holding the owner's whole value and which of its top-level fields are frozen;
    a field's history is this history read at that field. The key (run, owner, version) makes
    two racing writers take distinct versions or fail, never overwrite each other.
    """

    __tablename__ = "prompt_field_version"

    prompt_graph_run_id: Mapped[str] = mapped_column(
        Id, ForeignKey("prompt_graph_run.id", ondelete="CASCADE"), primary_key=True
    )
    owner_id: Mapped[str] = mapped_column(Text, primary_key=True)
    version: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    """execute | override | review | rollback | freeze | input"""
    value_json: Mapped[Any] = mapped_column(Json, nullable=True)
    """The owner's value after this write; NULL for `execute` (it is the node run's output_json)."""
    frozen_json: Mapped[Any] = mapped_column(Json, nullable=False, server_default=text("'{}'"))
    """{field: {"by": node id, "node_run_id", "at", "policy"}}; "*" freezes the whole value."""
    node_run_id: Mapped[str | None] = mapped_column(Id)
    by: Mapped[str] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    at: Mapped[float] = mapped_column(Double)


class SettingRow(Base):
    """Store-wide facts worth one indexed read (e.g. which system graphs were last synced)."""

    __tablename__ = "plait_setting"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class ApiTokenRow(Base):
    """A bearer token of the HTTP API (`plait token create`): its SHA-256 digest, never the token."""

    __tablename__ = "plait_api_token"
    __table_args__ = (
        UniqueConstraint("name", name="uq_plait_api_token_name"),
        UniqueConstraint("token_hash", name="uq_plait_api_token_hash"),
    )

    id: Mapped[str] = mapped_column(Id, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    token_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[float] = mapped_column(Double)
    last_used_at: Mapped[float | None] = mapped_column(Double)


# Core handles on the ORM tables: the repositories write with `insert()/update()` on these
# (one statement, no unit-of-work bookkeeping) because the engine calls them once per node.
GRAPH_DEF = cast(Table, GraphDefRow.__table__)
GRAPH_DEF_VERSION = cast(Table, GraphDefVersionRow.__table__)
GRAPH_RUN = cast(Table, GraphRunRow.__table__)
NODE_RUN = cast(Table, NodeRunRow.__table__)
LLM_CACHE = cast(Table, LlmCacheRow.__table__)
FIELD_VERSION = cast(Table, FieldVersionRow.__table__)
SETTING = cast(Table, SettingRow.__table__)
API_TOKEN = cast(Table, ApiTokenRow.__table__)
