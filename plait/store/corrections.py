"""Writing a person's correction: one transaction under the run's lease.

An override, a review answer, a rerun request or a rollback changes several rows at once
(the node run's override layer, stale marks on the downstream, activations queued for a
rerun, ledger versions, the run's status). They commit together or not at all, and only
while the caller holds the run's lease, so a correction never interleaves with an engine
executing the run or with another correction.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from plait.model.enums import NodeStatus, RunStatus
from plait.store.db import writer
from plait.store.errors import StoreError
from plait.store.models import FIELD_VERSION, GRAPH_RUN, NODE_RUN
from plait.store.writes import Version


class CorrectionConflict(StoreError):
    """The run changed under the correction (its lease was lost, or a ledger version was taken)."""


@dataclass(frozen=True, slots=True)
class SetOverride:
    """Put `value` on the override layer of a node run (`output_json` is never touched).

    The correction's time is `override_at`; the node's execution times stay as they were (a
    review answers a node that parked without finishing: it ends when it parked, at its start,
    so that its duration is never the time a person took)."""

    node_run_id: str
    value: Any
    by: str
    note: str | None
    policy: str
    status: NodeStatus = NodeStatus.OVERRIDDEN


@dataclass(frozen=True, slots=True)
class MarkStale:
    """Mark node runs `stale`: their inputs changed after they ran (only completed/overridden ones)."""

    node_run_ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class Queue:
    """Queue a new activation of a node (a `pending` row without a snapshot): the engine runs it."""

    node_id: str
    activation: int
    no_cache: bool = False
    """An explicit rerun: the person asked for a fresh answer, not the response cache's."""


@dataclass(frozen=True, slots=True)
class Reread:
    """A node waiting for a person (a review) whose input changed: its parked activation becomes
    `stale` history and a new one is queued, which reads the current values and waits again."""

    node_run_id: str
    queued: Queue


@dataclass(frozen=True, slots=True)
class Reopen:
    """Put a finished run back to `pending` so that `Engine.run` executes what was queued."""


@dataclass(frozen=True, slots=True)
class RunOutput:
    """Set the run's output (the newest effective output of its exit nodes)."""

    output: Any


Change = SetOverride | MarkStale | Queue | Reread | Reopen | RunOutput | Version

_CORRECTABLE = (NodeStatus.COMPLETED.value, NodeStatus.OVERRIDDEN.value, NodeStatus.STALE.value)


class CorrectionWriter:
    """Commits the changes of one correction all together or not at all, and only while the
    correction may write to the run (see `apply`)."""

    def __init__(self, engine: Engine) -> None:
        self._writer = writer(engine)

    def apply(self, run_id: str, owner: str | None, changes: Sequence[Change]) -> None:
        """Commit `changes` in one transaction, if `owner` holds the run's lease, or with `owner`
        None beside the engine executing the run (it must still be `running`); otherwise, or
        if a racing writer took a ledger version first, raise CorrectionConflict. Either way the
        run's count of corrections goes up: that is how the engine notices."""
        now = time.time()
        try:
            with self._writer.begin() as conn:
                row = conn.execute(
                    select(GRAPH_RUN.c.lease_owner, GRAPH_RUN.c.status)
                    .where(GRAPH_RUN.c.id == run_id)
                    .with_for_update()
                ).one_or_none()
                if row is None or (owner is not None and row.lease_owner != owner):
                    raise CorrectionConflict(f"run {run_id} is no longer held by this correction")
                if owner is None and row.status != RunStatus.RUNNING.value:
                    raise CorrectionConflict(f"run {run_id} stopped running while being corrected")
                for change in changes:
                    if isinstance(change, Reread):  # the parked activation becomes history, then as Queue
                        conn.execute(
                            update(NODE_RUN)
                            .where(NODE_RUN.c.id == change.node_run_id, NODE_RUN.c.status == NodeStatus.PENDING.value)
                            .values(status=NodeStatus.STALE.value)
                        )
                        change = change.queued
                    conn.execute(*_statement(run_id, change, now))
                conn.execute(
                    update(GRAPH_RUN)
                    .where(GRAPH_RUN.c.id == run_id)
                    .values(corrections=GRAPH_RUN.c.corrections + 1, updated_at=now)
                )
        except IntegrityError as exc:
            raise CorrectionConflict(f"run {run_id} was corrected concurrently; try again") from exc


def _statement(
    run_id: str, change: SetOverride | MarkStale | Queue | Reopen | RunOutput | Version, now: float
) -> tuple[Any, ...]:
    if isinstance(change, SetOverride):
        return (
            update(NODE_RUN)
            .where(NODE_RUN.c.id == change.node_run_id)
            .values(
                override_json=change.value,
                override_by=change.by,
                override_at=now,
                override_note=change.note,
                downstream_policy=change.policy,
                status=change.status.value,
                completed_at=func.coalesce(NODE_RUN.c.completed_at, NODE_RUN.c.started_at, now),
            ),
        )
    if isinstance(change, MarkStale):
        return (
            update(NODE_RUN)
            .where(NODE_RUN.c.id.in_(list(change.node_run_ids)), NODE_RUN.c.status.in_(_CORRECTABLE))
            .values(status=NodeStatus.STALE.value),
        )
    if isinstance(change, Queue):
        return (
            insert(NODE_RUN).values(
                id=str(uuid.uuid4()),
                prompt_graph_run_id=run_id,
                node_def_id=change.node_id,
                activation=change.activation,
                status=NodeStatus.PENDING.value,
                claims=0,
                created_at=now,
                no_cache=change.no_cache,
            ),
        )
    if isinstance(change, Reopen):
        return (
            update(GRAPH_RUN)
            .where(GRAPH_RUN.c.id == run_id)
            .values(status=RunStatus.PENDING.value, completed_at=None, error_json=None, updated_at=now),
        )
    if isinstance(change, RunOutput):
        return (update(GRAPH_RUN).where(GRAPH_RUN.c.id == run_id).values(output_json=change.output, updated_at=now),)
    return (
        insert(FIELD_VERSION).values(
            prompt_graph_run_id=run_id,
            owner_id=change.owner_id,
            version=change.version,
            kind=change.kind,
            value_json=change.value,
            frozen_json=change.frozen,
            node_run_id=change.node_run_id,
            by=change.by,
            reason=change.reason,
            at=now,
        ),
    )
