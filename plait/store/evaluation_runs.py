"""Creating the run an evaluation executes a case with: evaluation-only, one transaction.

An evaluation scores one node of a candidate graph version on the values a case recorded. Its
run is an ordinary run (`purpose` "evaluation") whose nodes before the evaluated one are already
there: the values the case recorded are written as given (an override by the evaluation, with
their ledger version), the nodes whose values do not matter as stale or skipped, and the
evaluated node is queued, as a rerun queues one. `Engine.run` then executes that node alone,
through everything an ordinary run goes through (templates, few-shot examples, the provider
pool, the response cache, budgets). No other write creates a run with node runs already ended:
it exists for evaluations only.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, insert, select

from plait.model.enums import NodeStatus, RunStatus
from plait.store.db import new_id
from plait.store.models import FIELD_VERSION, GRAPH_RUN, NODE_RUN

EVALUATION = "evaluation"
"""The `purpose` of a run an evaluation made."""


@dataclass(frozen=True, slots=True)
class PreparedRun:
    """A run of an evaluation, as it is created.

    `given`: node id -> the value recorded for it (stored as the node's override, and version 1
    of it in the ledger); `stale` (node id -> the output it holds: None, or a CONDITION's branch)
    and `skipped`: nodes that hold no value that matters; `queued`:
    the nodes to execute (new `pending` activations; `fresh`: not answered from the response
    cache). With no node given, stale, skipped or queued, the run starts like any new run."""

    run_id: str
    graph_id: str
    graph_version: int
    schema_version: str
    input: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)
    """`RunRecord.options`: what its few-shot pools leave out."""
    llm: dict[str, Any] | None = None
    given: Mapping[str, Any] = field(default_factory=dict)
    stale: Mapping[str, Any] = field(default_factory=dict)
    skipped: Sequence[str] = ()
    queued: Sequence[str] = ()
    fresh: bool = False
    by: str = EVALUATION
    note: str | None = None
    """Why the given values are there (kept as their override note and ledger reason)."""


def write_prepared_run(conn: Connection, prepared: PreparedRun) -> bool:
    """Create the run in `conn`'s transaction; False (nothing written) when a run with its id exists."""
    if conn.execute(select(GRAPH_RUN.c.id).where(GRAPH_RUN.c.id == prepared.run_id)).first() is not None:
        return False
    now = time.time()
    begun = bool(prepared.given or prepared.stale or prepared.skipped or prepared.queued)
    conn.execute(insert(GRAPH_RUN).values(
        id=prepared.run_id, prompt_graph_def_id=prepared.graph_id, graph_def_ver=prepared.graph_version,
        schema_version=prepared.schema_version, status=RunStatus.PENDING.value, input_json=prepared.input,
        options_json=prepared.options or None, created_at=now, started_at=now if begun else None, updated_at=now,
        llm_json=prepared.llm, purpose=EVALUATION))  # fmt: skip
    rows: list[dict[str, Any]] = []
    versions: list[dict[str, Any]] = []
    for node_id, value in prepared.given.items():
        row = _node_row(prepared.run_id, node_id, NodeStatus.OVERRIDDEN, now)
        row |= {"override_json": value, "override_by": prepared.by, "override_at": now,
                "override_note": prepared.note, "completed_at": now}  # fmt: skip
        rows.append(row)
        versions.append({
            "prompt_graph_run_id": prepared.run_id, "owner_id": node_id, "version": 1, "kind": "override",
            "value_json": value, "frozen_json": {}, "node_run_id": row["id"], "by": prepared.by,
            "reason": prepared.note, "at": now,
        })  # fmt: skip
    rows += [
        _node_row(prepared.run_id, n, NodeStatus.STALE, now) | {"output_json": value, "completed_at": now}
        for n, value in prepared.stale.items()
    ]
    rows += [_node_row(prepared.run_id, n, NodeStatus.SKIPPED, now) | {"completed_at": now} for n in prepared.skipped]
    rows += [_node_row(prepared.run_id, n, NodeStatus.PENDING, now, no_cache=prepared.fresh) for n in prepared.queued]
    if rows:
        conn.execute(insert(NODE_RUN), rows)
    if versions:
        conn.execute(insert(FIELD_VERSION), versions)
    return True


def _node_row(run_id: str, node_id: str, status: NodeStatus, now: float, *, no_cache: bool = False) -> dict[str, Any]:
    return {
        "id": new_id(), "prompt_graph_run_id": run_id, "node_def_id": node_id, "activation": 1,
        "status": status.value, "claims": 0, "created_at": now, "no_cache": no_cache, "output_json": None,
        "override_json": None, "override_by": None, "override_at": None, "override_note": None, "completed_at": None,
    }  # fmt: skip
