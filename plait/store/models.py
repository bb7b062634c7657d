"""The store's tables, as SQLAlchemy Core `Table`s on one `METADATA`.

The repositories query and write these directly with `select()/insert()/update()` (one
statement each, no unit-of-work bookkeeping: the engine writes once per node). They are Core
tables rather than ORM classes because nothing here needs identity maps or relationships,
and loading the ORM would slow every CLI command's start-up (docs/performance.md). The tables themselves
are created only by the Alembic migrations in `plait/store/migrations/versions/` (a test
checks that the two agree). Change a table → add a migration.

Conventions:
- ids are UUID4 strings (`TEXT`), so a graph can be referred to by id or slug in one column type;
- timestamps are Unix seconds as double precision (see `records.py`);
- JSON columns are `JSON` (TEXT on SQLite, `json` on PostgreSQL: key order preserved, see
  `Json`); Python `None` is SQL `NULL` (`none_as_null`), so "no override" and "no output" are
  real NULLs, not JSON `null`;
- statuses are plain strings, not database enums: adding a status must not need a type migration.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Double,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.types import TypeEngine

Json: TypeEngine[Any] = JSON(none_as_null=True)
"""`json` on PostgreSQL too, not `jsonb`: jsonb reorders object keys, and key order is meaning
here. A JSON Schema's property order is the order a model generates fields in (`response_format`),
and objects rendered into prompts must read back exactly as written, or a resumed run (state
rebuilt from the store) would send different prompts than the run that was interrupted, and
SQLite and PostgreSQL would behave differently. (An expression index on `col::jsonb` can
still serve queries later.)"""
Id = String(36)

METADATA = MetaData()
"""Every table of the store; `full_metadata()` adds the indexes with dialect options."""


def _required(name: str, kind: Any, *args: Any, **kwargs: Any) -> Column[Any]:
    return Column(name, kind, *args, nullable=False, **kwargs)


def _optional(name: str, kind: Any, *args: Any, **kwargs: Any) -> Column[Any]:
    return Column(name, kind, *args, nullable=True, **kwargs)


GRAPH_DEF = Table(
    "prompt_graph_def",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("slug", String(128)),
    _required("name", Text),
    _optional("description", Text),
    _required("nodes_json", Json, server_default=text("'[]'")),
    _required("edges_json", Json, server_default=text("'[]'")),
    _required("schema_registry_json", Json, server_default=text("'[]'")),
    _required("migrations_json", Json, server_default=text("'[]'")),
    _required("version", Integer, server_default=text("1")),
    _required("schema_version", String(32), server_default=text("'1.0.0'")),
    _required("source_type", String(16), server_default=text("'user'")),
    _optional("parent_def_id", Id),
    _optional("parent_def_ver_at_fork", Integer),
    _optional("parent_schema_ver_at_fork", String(32)),
    _required("created_at", Double),
    _required("updated_at", Double),
    _optional("deleted_at", Double),
    Index("idx_pgd_source", "source_type"),
)
"""A graph (one slug) and a denormalised copy of its latest version. A slug names one live
graph: see `full_metadata` for its partial unique index."""

GRAPH_DEF_VERSION = Table(
    "prompt_graph_def_version",
    METADATA,
    Column("def_id", Id, ForeignKey("prompt_graph_def.id", ondelete="CASCADE"), primary_key=True),
    Column("version", Integer, primary_key=True),
    _required("content_json", Json),
    _required("content_hash", String(64)),
    _required("schema_version", String(32)),
    _required("created_at", Double),
)
"""One immutable saved version of a graph: old versions stay readable for the runs pinned to them."""

GRAPH_RUN = Table(
    "prompt_graph_run",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("prompt_graph_def_id", Id),
    _required("graph_def_ver", Integer),
    _required("schema_version", String(32)),
    _optional("workflow_run_id", Text),
    _optional("workflow_node_run_id", Text),
    _optional("material_id", Text),
    _required("status", String(16), server_default=text("'pending'")),
    _required("input_json", Json),
    # Kept for compatibility with the original table layout; the engine rebuilds context from node runs.
    _required("context_json", Json, server_default=text("'{}'")),
    _optional("output_json", Json),
    _optional("error_json", Json),
    _optional("lease_owner", Text),
    _optional("lease_expires_at", Double),
    _required("tokens_input", BigInteger, server_default=text("0")),
    _required("tokens_output", BigInteger, server_default=text("0")),
    _required("cost_usd", Double, server_default=text("0")),
    _required("created_at", Double),
    _optional("started_at", Double),
    _optional("completed_at", Double),
    _required("updated_at", Double),
    # Corrections made so far: an engine executing the run compares it at every commit.
    _required("corrections", Integer, server_default=text("0")),
    # The model selection the run executes with (an `--llm` spec, or a plait.toml path and its
    # roles; never a secret): later executions of the run reuse it.
    _optional("llm_json", Json),
    # Each explicit change of the run's model: {"at", "by", "from", "to"}.
    _required("llm_history_json", Json, server_default=text("'[]'")),
    # Seconds engines spent executing the run, summed over its executions: the time a person
    # took between them (a review, a correction) is not in it, unlike `completed_at - started_at`.
    _required("active_s", Double, server_default=text("0")),
    # A run parked by WAIT nodes is continued at this time (by `plait serve`, a worker, or the
    # `plait run` that is waiting for it); None for every other run.
    _optional("wake_at", Double),
    # A child run (of a SUBGRAPH, MAP or LOOP node; its parent run and node run are
    # workflow_run_id and workflow_node_run_id): its item or iteration (0 for a SUBGRAPH).
    _optional("child_key", Integer),
    # A child run of an inline body: the path of node ids to that body in the graph version
    # (`map1`, `outer/inner`); None when the run executes the graph itself.
    _optional("body", Text),
    # Why the run exists when a person did not ask for it: "evaluation" for the runs an evaluation
    # makes (left out of run listings and few-shot pools); None for every other run.
    _optional("purpose", String(16)),
    # How the engine executes the run beyond its graph and input (`RunRecord.options`): for an
    # evaluation's run, the corrections its few-shot pool leaves out. None for every other run.
    _optional("options_json", Json),
    ForeignKeyConstraint(
        ["prompt_graph_def_id", "graph_def_ver"],
        ["prompt_graph_def_version.def_id", "prompt_graph_def_version.version"],
        name="fk_pgr_def_version",
    ),
    Index("idx_pgr_def", "prompt_graph_def_id"),
    Index("idx_pgr_wf_run", "workflow_run_id"),
    Index("idx_pgr_status", "status"),
    Index("idx_pgr_created", "created_at"),
    Index("idx_pgr_wake", "wake_at"),
    Index("uq_pgr_child", "workflow_node_run_id", "child_key", unique=True),
)
"""A run, pinned to the graph version it started with."""

NODE_RUN = Table(
    "prompt_node_run",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("prompt_graph_run_id", Id, ForeignKey("prompt_graph_run.id", ondelete="CASCADE")),
    _required("node_def_id", Text),
    _required("activation", Integer, server_default=text("0")),
    _required("status", String(16), server_default=text("'pending'")),
    _optional("input_snapshot_json", Json),
    _optional("output_json", Json),
    _optional("override_json", Json),
    _optional("override_by", Text),
    _optional("override_at", Double),
    _optional("override_note", Text),
    _optional("downstream_policy", String(16), server_default=text("'INVALIDATE'")),
    _required("attempts_json", Json, server_default=text("'[]'")),
    _optional("error_json", Json),
    _required("tokens_input", Integer, server_default=text("0")),
    _required("tokens_output", Integer, server_default=text("0")),
    _required("cost_usd", Double, server_default=text("0")),
    _optional("owner", Text),
    _required("claims", Integer, server_default=text("0")),
    # Executions of this activation that were lost with their process (it died, or hung past the
    # run's lease, while the node was `running`): counted when another engine takes the node over.
    _required("lost", Integer, server_default=text("0")),
    _required("created_at", Double),
    _optional("started_at", Double),
    _optional("completed_at", Double),
    # Ledger versions this activation read: {"input": 1, "<node id>": 3} (see FIELD_VERSION).
    _optional("consumed_json", Json),
    # Queued by an explicit rerun: its model call must not be answered from the response cache.
    _required("no_cache", Boolean, server_default=false()),
    # Its leading column serves "the node runs of this run" too: no index on the run id alone, which
    # every claim would write for nothing.
    UniqueConstraint("prompt_graph_run_id", "node_def_id", "activation", name="uq_pnr_run_node_activation"),
)
"""One activation of a node in a run; `UNIQUE(run, node, activation)` is the idempotency guard."""

LLM_CACHE = Table(
    "llm_response_cache",
    METADATA,
    Column("key", String(64), primary_key=True),
    _required("provider", Text),
    _required("model", Text),
    _required("response_json", Json),
    # The node run whose call produced the answer (recorded on every hit).
    _optional("node_run_id", Id),
    _required("created_at", Double),
)
"""Validated model answers by request hash: an identical later request (same provider and
model, messages, tools, response_format, temperature, seed) is answered from here at no cost.
Written with the node run that produced the answer, in its commit."""

FIELD_VERSION = Table(
    "prompt_field_version",
    METADATA,
    Column("prompt_graph_run_id", Id, ForeignKey("prompt_graph_run.id", ondelete="CASCADE"), primary_key=True),
    Column("owner_id", Text, primary_key=True),
    Column("version", Integer, primary_key=True),
    # execute | override | review | rollback | freeze | input
    _required("kind", String(16)),
    # The owner's value after this write; NULL for `execute` (it is the node run's output_json).
    _optional("value_json", Json),
    # {field: {"by": node id, "node_run_id", "at", "policy"}}; "*" freezes the whole value.
    _required("frozen_json", Json, server_default=text("'{}'")),
    _optional("node_run_id", Id),
    _required("by", Text),
    _optional("reason", Text),
    _required("at", Double),
    # On SQLite the rows live in the index of their key alone: a node's commit writes one page
    # of the ledger, not two (PostgreSQL ignores it).
    sqlite_with_rowid=False,
)
"""One write to a value of a run (the field ledger).

The unit is a whole *owner*: `input` (the run input) or a node id (that node's effective
output). Every write (an execution, an override, a review, a rollback, a freeze) appends
version n + 1 holding the owner's whole value and which of its top-level fields are frozen;
a field's history is this history read at that field. The key (run, owner, version) makes
two racing writers take distinct versions or fail, never overwrite each other."""

SETTING = Table(
    "plait_setting",
    METADATA,
    Column("key", String(64), primary_key=True),
    _required("value", Text),
)
"""Store-wide facts worth one indexed read (e.g. which system graphs were last synced)."""

SETTINGS_CHANGE = Table(
    "plait_settings_change",
    METADATA,
    Column("revision", Integer, primary_key=True, autoincrement=False),
    _required("at", Double),
    _required("by", String(200)),
    _optional("note", Text),
    _required("overlay_json", Json),
    _required("previous_json", Json),
    _optional("reverts", Integer),
)
"""Every change of the settings made while the server runs (plait/config/overlay.py): the whole
overlay over plait.toml after it (the newest row's is in force) and before it, who made it and
why. `revision` counts from 1 and is written as the one read plus one, so of two changes made
on the same revision one is refused; `reverts` names the change a revert undid."""

API_TOKEN = Table(
    "plait_api_token",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("name", String(128)),
    _required("token_hash", String(64)),
    _required("created_at", Double),
    _optional("last_used_at", Double),
    UniqueConstraint("name", name="uq_plait_api_token_name"),
    UniqueConstraint("token_hash", name="uq_plait_api_token_hash"),
)
"""A bearer token of the HTTP API (`plait token create`): its SHA-256 digest, never the token."""


PROMPT_TEMPLATE = Table(
    "prompt_script_template",
    METADATA,
    Column("id", String(128), primary_key=True),
    _required("name", Text),
    _optional("description", Text),
    _required("category", String(64), server_default=text("'general'")),
    _required("source_type", String(16), server_default=text("'user'")),
    _required("script_language", String(16), server_default=text("'js'")),
    _required("script_code", Text),
    _optional("schema_target", Text),
    _optional("based_on_template_id", String(128)),
    _required("created_at", Double),
    _required("updated_at", Double),
    _optional("deleted_at", Double),
    Index("idx_pst_category", "category"),
)
"""A prompt-script template (docs/prompt-scripts.md): a user's own, or one Plait ships
(`source_type` system, read-only). Deleting sets `deleted_at`; the row stays for the runs that
named it."""

TEMPLATE_USAGE = Table(
    "prompt_script_template_usage",
    METADATA,
    Column("category", String(64), primary_key=True),
    _required("template_id", String(128)),
    _required("used_at", Double),
)
"""The template last used in each category (what the editor opens with)."""


BATCH = Table(
    "batch",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("graph_id", Id),
    _required("graph_version", Integer),
    _required("input_path", Text),
    _required("output_path", Text),
    _required("failed_path", Text),
    _required("status", String(16)),
    _optional("total", BigInteger),
    _required("created_at", Double),
    _required("updated_at", Double),
    Index("idx_batch_files", "input_path", "output_path"),
)
"""A `plait batch`: one run per record of a JSONL file. `status`: running, completed (every
record finished) or interrupted; `--resume` continues the newest batch of the same files."""

BATCH_RECORD = Table(
    "batch_record",
    METADATA,
    Column("batch_id", Id, ForeignKey("batch.id", ondelete="CASCADE"), primary_key=True),
    Column("record_index", BigInteger, primary_key=True),
    _optional("run_id", Id),
    _required("status", String(16)),
    _optional("reason", Text),
    _required("updated_at", Double),
)
"""One finished record of a batch, by its 0-based line in the input file: `completed` or
`failed` (with the reason). The rows are the batch's cursor: `--resume` skips what they say is
finished; an unfinished record's run is found by its id, which is derived from the batch and
the line (`plait.runs.batch.record_run_id`)."""

SCHEDULE = Table(
    "schedule",
    METADATA,
    Column("id", Id, primary_key=True),
    _required("graph_id", Id),
    _required("cron", Text),
    _required("timezone", String(64), server_default=text("'UTC'")),
    _optional("input_json", Json),
    _required("catch_up", String(8), server_default=text("'one'")),
    _required("status", String(16), server_default=text("'active'")),
    _required("next_fire_at", Double),
    _optional("last_fired_at", Double),
    _optional("last_run_id", Id),
    _required("created_at", Double),
    _required("updated_at", Double),
    _optional("deleted_at", Double),
    Index("idx_schedule_due", "status", "next_fire_at"),
)
"""A cron schedule of a graph (docs/schedules.md): `next_fire_at` is the next firing not yet
claimed; `catch_up` (none | one | all) says what happens to firings missed while no scheduler
ran. `status`: active or paused."""

SCHEDULE_FIRING = Table(
    "schedule_firing",
    METADATA,
    Column("schedule_id", Id, ForeignKey("schedule.id", ondelete="CASCADE"), primary_key=True),
    Column("fire_at", Double, primary_key=True),
    _optional("run_id", Id),
    _required("claimed_at", Double),
    _required("claimed_by", Text),
)
"""Each firing of a schedule, claimed once: the key makes a second claim of the same instant
fail, whichever scheduler makes it. `run_id` is set once the firing's run exists; a firing
claimed by a scheduler that died before is given its run by the next one."""


OUTBOX = Table(
    "outbox",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _required("run_id", Id),
    _required("reason", String(32)),
    _required("created_at", Double),
    _optional("sent_at", Double),
    Index("idx_outbox_unsent", "sent_at", "id"),
)
"""Messages to workers (`plait.worker`), written in the transaction of what they announce: a
run to execute, created or reopened. A relay sends the unsent ones to the broker and marks them
sent; a row rolled back with its run is never sent, a row committed is sent however often the
broker or the relay fails (a message sent twice is harmless: a run is executed under a lease)."""


RUN_DECISION = Table(
    "run_decision",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Id, ForeignKey("prompt_graph_run.id", ondelete="CASCADE"), nullable=False),
    _optional("node_run_id", Id),
    _required("at", Double),
    _required("action", String(16)),
    _required("rule", String(32)),
    _required("reason", Text),
    _optional("probe_json", Json),
    Index("idx_run_decision_run", "run_id", "id"),
)
"""What the engine decided about a run because of the machine's or the providers' capacity
(queued, paused, degraded, rejected), with the probe it decided on (plait/engine/resources.py)."""


GRAPH_DRAFT = Table(
    "prompt_graph_draft",
    METADATA,
    Column("slug", String(128), primary_key=True),
    _required("document_json", Json),
    _optional("base_version", Integer),
    _required("saved_at", Double),
)
"""Edits of a graph not stored as a version yet, one per slug: kept as written, valid or not,
so that a graph being built (or one that does not validate yet) survives a reload and another
browser. `base_version` is the stored version the edits started from; NULL for a graph never
stored. Saving a version does not read this table: a draft is only ever a starting point."""


def full_metadata() -> MetaData:
    """`METADATA` with the indexes that carry dialect options: what Alembic compares with.

    Naming a dialect in an index option (`postgresql_where`) makes SQLAlchemy import that
    dialect's module, which every command using SQLite would pay for at start-up; nothing at
    run time reads these indexes from the metadata (the migrations create them), so they are
    added only here.
    """
    if "uq_pgd_slug_live" not in {index.name for index in GRAPH_DEF.indexes}:
        # A slug names one live graph; a deleted graph frees its slug but keeps its rows for old runs.
        Index(
            "uq_pgd_slug_live",
            GRAPH_DEF.c.slug,
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        )
    return METADATA


import plait.store.skill_models  # noqa: E402, F401  (registers its tables)
from plait.store import chat_models, evaluation_models, knowledge_models  # noqa: E402, F401  (register their tables)
