"""Batches (`batch`, `batch_record`): one run per record of a JSONL file, and the cursor that
lets `plait batch --resume` skip what is finished.

A record is named by its 0-based line in the input file, so the cursor needs no copy of the
input. Finished records are read back in index order, a page at a time (`finished`), so a
resumed batch of a million records walks them beside the input file instead of loading them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, bindparam, func, insert, select, update

from plait.store.db import conflict_insert, writer
from plait.store.errors import NotFoundError
from plait.store.models import BATCH, BATCH_RECORD

RUNNING, COMPLETED, FAILED, INTERRUPTED = "running", "completed", "failed", "interrupted"
FINISHED = (COMPLETED, FAILED)
PAGE = 2000


@dataclass(frozen=True, slots=True)
class RecordMark:
    """Where record `index` stands: its status, its run (once it has one) and, failed, why."""

    index: int
    status: str
    run_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """One batch as stored."""

    id: str
    graph_id: str
    graph_version: int
    input_path: str
    output_path: str
    failed_path: str
    status: str
    total: int | None
    created_at: float
    updated_at: float


class BatchRepository:
    """Creates batches and keeps each record's state."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)
        self._mark = _mark_statement(engine)
        """Built once: a batch marks every record, and building the statement costs more than running it."""

    def create(self, *, graph_id: str, graph_version: int, input_path: str, output_path: str,
               failed_path: str) -> BatchRecord:  # fmt: skip
        now = time.time()
        record = BatchRecord(str(uuid.uuid4()), graph_id, graph_version, input_path, output_path, failed_path,
                             RUNNING, None, now, now)  # fmt: skip
        with self._writer.begin() as conn:
            conn.execute(insert(BATCH).values({name: getattr(record, name) for name in BatchRecord.__slots__}))
        return record

    def get(self, batch_id: str) -> BatchRecord:
        with self._engine.connect() as conn:
            row = conn.execute(select(BATCH).where(BATCH.c.id == batch_id)).one_or_none()
        if row is None:
            raise NotFoundError(f"no batch {batch_id}")
        return BatchRecord(**row._mapping)

    def newest(self, input_path: str, output_path: str) -> BatchRecord | None:
        """The newest batch of these files (what `--resume` continues)."""
        query = (
            select(BATCH)
            .where(BATCH.c.input_path == input_path, BATCH.c.output_path == output_path)
            .order_by(BATCH.c.created_at.desc())
            .limit(1)
        )
        with self._engine.connect() as conn:
            row = conn.execute(query).one_or_none()
        return BatchRecord(**row._mapping) if row is not None else None

    def set_status(self, batch_id: str, status: str, *, total: int | None = None) -> None:
        values: dict[str, Any] = {"status": status, "updated_at": time.time()}
        if total is not None:
            values["total"] = total
        with self._writer.begin() as conn:
            conn.execute(update(BATCH).where(BATCH.c.id == batch_id).values(**values))

    def mark(self, batch_id: str, marks: Sequence[RecordMark]) -> None:
        """Record where each record stands, all in one transaction (a run id once set is kept)."""
        now = time.time()
        rows = [{"batch_id": batch_id, "record_index": m.index, "run_id": m.run_id, "status": m.status,
                 "reason": m.reason, "updated_at": now} for m in marks]  # fmt: skip
        with self._writer.begin() as conn:
            conn.execute(self._mark, rows)

    def finished(self, batch_id: str) -> Iterator[int]:
        """The indices of the finished records (completed or failed), ascending, read a page at
        a time (no transaction stays open between pages)."""
        after = -1
        while True:
            query = (
                select(BATCH_RECORD.c.record_index)
                .where(
                    BATCH_RECORD.c.batch_id == batch_id,
                    BATCH_RECORD.c.record_index > after,
                    BATCH_RECORD.c.status.in_(FINISHED),
                )
                .order_by(BATCH_RECORD.c.record_index)
                .limit(PAGE)
            )
            with self._engine.connect() as conn:
                page = [int(i) for i in conn.execute(query).scalars()]
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1]

    def finished_records(self, batch_id: str) -> Iterator[RecordMark]:
        """The finished records (completed or failed) with their runs and reasons, ascending."""
        after = -1
        while True:
            query = (
                select(BATCH_RECORD.c.record_index, BATCH_RECORD.c.status, BATCH_RECORD.c.run_id, BATCH_RECORD.c.reason)
                .where(
                    BATCH_RECORD.c.batch_id == batch_id,
                    BATCH_RECORD.c.record_index > after,
                    BATCH_RECORD.c.status.in_(FINISHED),
                )
                .order_by(BATCH_RECORD.c.record_index)
                .limit(PAGE)
            )
            with self._engine.connect() as conn:
                page = [
                    RecordMark(int(i), str(status), run_id, reason) for i, status, run_id, reason in conn.execute(query)
                ]
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1].index

    def last_index(self, batch_id: str) -> int | None:
        """The highest index of a record of the batch the store knows (None: none yet)."""
        query = select(func.max(BATCH_RECORD.c.record_index)).where(BATCH_RECORD.c.batch_id == batch_id)
        with self._engine.connect() as conn:
            found = conn.execute(query).scalar()
        return None if found is None else int(found)

    def counts(self, batch_id: str) -> dict[str, int]:
        """How many records are in each state."""
        query = (
            select(BATCH_RECORD.c.status, func.count())
            .where(BATCH_RECORD.c.batch_id == batch_id)
            .group_by(BATCH_RECORD.c.status)
        )
        with self._engine.connect() as conn:
            return {str(status): int(n) for status, n in conn.execute(query)}


def _mark_statement(engine: Engine) -> Any:
    """The upsert of one record's state, with bound parameters; a run id once set is kept."""
    names = ("batch_id", "record_index", "run_id", "status", "reason", "updated_at")
    statement = conflict_insert(engine)(BATCH_RECORD).values({name: bindparam(name) for name in names})
    excluded = statement.excluded
    changed = {"status": excluded.status, "reason": excluded.reason, "updated_at": excluded.updated_at,
               "run_id": func.coalesce(excluded.run_id, BATCH_RECORD.c.run_id)}  # fmt: skip
    return statement.on_conflict_do_update(index_elements=["batch_id", "record_index"], set_=changed)
