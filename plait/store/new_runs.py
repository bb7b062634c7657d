"""The row of a new run, and the write that creates one inside the engine's group commit.

A run is created either on its own (`RunRepository.add`: a pending run for someone to start,
or one announced to the workers) or, when the engine that creates it executes it at once, as
the first write of the transaction that records its input and claims its first nodes
(`CreateRun`): one transaction fewer per run, which is what a batch of many small runs spends
its time on.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, insert

from plait.model.enums import RunStatus
from plait.store.models import GRAPH_RUN, OUTBOX
from plait.store.records import ChildOf

RUN_COLUMNS = (
    "id",
    "prompt_graph_def_id",
    "graph_def_ver",
    "schema_version",
    "status",
    "input_json",
    "context_json",
    "created_at",
    "started_at",
    "updated_at",
    "lease_owner",
    "lease_expires_at",
    "llm_json",
    "workflow_run_id",
    "workflow_node_run_id",
    "child_key",
    "body",
)
RUN_JSON_COLUMNS = frozenset({"input_json", "context_json", "llm_json"})
# Built once: building a statement costs more than running it.
INSERT_RUN = insert(GRAPH_RUN).values({name: bindparam(name) for name in RUN_COLUMNS})
ANNOUNCE_RUN = insert(OUTBOX).values(
    {"run_id": bindparam("run_id"), "reason": bindparam("reason"), "created_at": bindparam("created_at")}
)


@dataclass(frozen=True, slots=True)
class NewRun:
    """What a new run is created with (see `RunRepository.add` for each part)."""

    graph_id: str
    graph_version: int
    schema_version: str
    input: dict[str, Any]
    lease: tuple[str, float] | None = None
    llm: dict[str, Any] | None = None
    child: ChildOf | None = None
    body: str | None = None
    run_id: str | None = None

    def row(self, now: float | None = None) -> dict[str, Any]:
        """The run's row (a fresh id unless `run_id` names one); `running` and leased when `lease`."""
        now = time.time() if now is None else now
        lease, child = self.lease, self.child
        return {
            "id": self.run_id or str(uuid.uuid4()),
            "prompt_graph_def_id": self.graph_id,
            "graph_def_ver": self.graph_version,
            "schema_version": self.schema_version,
            "status": (RunStatus.RUNNING if lease else RunStatus.PENDING).value,
            "input_json": self.input,
            "context_json": {},
            "created_at": now,
            "started_at": now if lease else None,
            "updated_at": now,
            "lease_owner": lease[0] if lease else None,
            "lease_expires_at": now + lease[1] if lease else None,
            "llm_json": self.llm,
            "workflow_run_id": child.run_id if child else None,
            "workflow_node_run_id": child.node_run_id if child else None,
            "child_key": child.key if child else None,
            "body": self.body,
        }


@dataclass(frozen=True, slots=True)
class CreateRun:
    """Insert a new run, already begun: the first write of the unit that records its input and
    claims its first nodes. Result: None. A unit whose run cannot be created raises what
    `RunRepository.add` would (ChildExists, RunExists, NotFoundError for an unknown graph)."""

    run: NewRun
    row: dict[str, Any]

    @property
    def run_id(self) -> str:
        return str(self.row["id"])

    @classmethod
    def of(cls, run: NewRun) -> CreateRun:
        if run.lease is None:
            raise ValueError("CreateRun is for a run its creator executes at once: give it a lease")
        return cls(run, run.row())
