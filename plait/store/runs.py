"""Runs, run leases and node runs: the engine's side of the store.

Correctness under concurrency rests on the database, not on locks in this process: every
state change is one conditional statement (`UPDATE ... WHERE status = ... AND owner = ...`,
`INSERT ... ON CONFLICT DO NOTHING`) whose row count says whether this caller won. The same
code path holds for threads, for processes on one SQLite file and for workers on PostgreSQL.

The hot path (`claim_node`, `finish_node`, `record_skipped`, and the engine's batches of them)
goes through `node_writes.NodeWriter`: statements built once, straight on the DBAPI
connection on SQLite (see `fastpath.py`), many nodes of many runs per transaction.

Lease expiry and every timestamp use the clock of the process that writes them: engines on
several machines sharing one PostgreSQL store need synchronized clocks (NTP), and a lease TTL
well above the possible skew.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Collection
from typing import Any

from sqlalchemy import Engine, Text, bindparam, cast, func, literal, select, tuple_, update
from sqlalchemy.exc import IntegrityError

from plait.model.enums import TERMINAL_RUN_STATUSES, NodeStatus, RunStatus
from plait.redact import redact
from plait.store.db import json_dumps, writer
from plait.store.errors import ChildExists, NotFoundError, RunExists, StoreError
from plait.store.fastpath import Statements
from plait.store.models import GRAPH_DEF, GRAPH_RUN, NODE_RUN
from plait.store.new_runs import ANNOUNCE_RUN, INSERT_RUN, RUN_JSON_COLUMNS, NewRun
from plait.store.node_writes import NodeWriter
from plait.store.prefix import resolve_node_run_id, resolve_run_id
from plait.store.records import ChildOf, NodeRunRecord, RunRecord, node_run_from_row, run_from_row
from plait.store.writes import Claim, Finish, Skip

_RUN_COLS = (*GRAPH_RUN.c, GRAPH_DEF.c.slug)
_RUNS = GRAPH_RUN.join(GRAPH_DEF, GRAPH_DEF.c.id == GRAPH_RUN.c.prompt_graph_def_id)
# Statements of `begin`, built once (building a statement costs more than running it).
_REFUSE_RUN = (
    update(GRAPH_RUN)
    .where(GRAPH_RUN.c.id == bindparam("run_id"), GRAPH_RUN.c.status == RunStatus.PENDING.value)
    .values(
        status=bindparam("status"),
        error_json=bindparam("error_json"),
        completed_at=bindparam("completed"),
        updated_at=bindparam("now"),
    )
)
"""A `pending` run the engine refuses: one that never started fails with the reason, one a
correction reopened is paused with it (resumable with another --llm or --config). Left
`pending`, every `plait serve` start would try it again."""
_RUN_FOR_UPDATE = (
    select(*_RUN_COLS).select_from(_RUNS).where(GRAPH_RUN.c.id == bindparam("run_id")).with_for_update(of=GRAPH_RUN)
)
_BEGIN_RUN = (
    update(GRAPH_RUN)
    .where(GRAPH_RUN.c.id == bindparam("run_id"))
    .values(
        status=RunStatus.RUNNING.value,
        started_at=bindparam("started"),
        completed_at=None,
        updated_at=bindparam("now"),
        lease_owner=bindparam("owner"),
        lease_expires_at=bindparam("expires"),
    )
)


class RunRepository:
    """Creates runs and records their execution. At most one engine drives a run at a time (its
    lease), a node activation is executed by at most one owner, and a node's output, once
    committed, never changes. Safe to share between threads, processes and machines: each
    change either wins in the database or reports that it lost."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)
        self.nodes = NodeWriter(engine, self._no_run, self._refused)
        """Batched node-run writes (the engine's group commit goes through it)."""
        self._statements = Statements(
            engine,
            {
                "insert_run": INSERT_RUN,
                "announce_run": ANNOUNCE_RUN,
                "run_for_update": _RUN_FOR_UPDATE,
                "begin_run": _BEGIN_RUN,
                "refuse_run": _REFUSE_RUN,
            },
            RUN_JSON_COLUMNS | {"error_json"},
            json_dumps,
        )

    def close(self) -> None:
        """Release the connections this repository keeps (`Store.close` calls it)."""
        self._statements.close()
        self.nodes.close()

    # ----------------------------------------------------------------- runs

    def create(self, *, graph_id: str, graph_version: int, schema_version: str, input: dict[str, Any]) -> RunRecord:
        """A `pending` run pinned to one stored graph version."""
        return self.get(
            self.add(graph_id=graph_id, graph_version=graph_version, schema_version=schema_version, input=input)
        )

    def add(
        self,
        *,
        graph_id: str,
        graph_version: int,
        schema_version: str,
        input: dict[str, Any],
        lease: tuple[str, float] | None = None,
        llm: dict[str, Any] | None = None,
        child: ChildOf | None = None,
        body: str | None = None,
        run_id: str | None = None,
        announce: str | None = None,
    ) -> str:
        """`create` without reading the run back: its id (starting runs in bulk needs no more).

        With `lease=(owner, ttl_s)` the run is created already begun (`running`, leased to
        `owner`), as `begin` would leave it: one transaction instead of two for a run that its
        creator executes at once. `llm`: the model selection its executions use (see
        `plait.runs.model_choice`; never a secret). `child`: the node run and key of a child run
        (ChildExists when that node run already has a child with that key); `body`: the path
        to the inline body it executes (see `RunRecord.body`). `run_id`: the id to give it, when
        the caller recorded it elsewhere first (a batch's record names its run before it exists).
        `announce`: a reason (`start`, `batch`, `schedule`) to tell the workers about the run,
        written to the outbox in the same transaction (see `OutboxRepository`).
        """
        new = NewRun(graph_id, graph_version, schema_version, input, lease, llm, child, body, run_id)
        row = new.row()
        try:
            with self._statements.transaction() as session:
                session.execute("insert_run", row)
                if announce is not None:
                    session.execute(
                        "announce_run", {"run_id": row["id"], "reason": announce, "created_at": row["created_at"]}
                    )
        except IntegrityError as exc:
            raise self._refused(new, row["id"], exc) from exc
        return str(row["id"])

    def _refused(self, new: NewRun, run_id: str, exc: IntegrityError) -> StoreError:
        """Why inserting the run `run_id` broke a constraint, in the store's words."""
        if new.child is not None and self.child(new.child.node_run_id, new.child.key) is not None:
            return ChildExists(f"node run {new.child.node_run_id} already has child {new.child.key}")
        if self.exists(run_id):
            return RunExists(f"run {run_id} exists already")
        return NotFoundError(
            f"cannot start a run of graph {new.graph_id} version {new.graph_version}: that graph version is not "
            "in this database; save the graph first (Store.graphs.save) and use the id and version it returns"
        )

    def get(self, run_id: str) -> RunRecord:
        """The run `run_id` (a full id); NotFoundError when there is none."""
        with self._engine.connect() as conn:
            row = conn.execute(select(*_RUN_COLS).select_from(_RUNS).where(GRAPH_RUN.c.id == run_id)).one_or_none()
        if row is None:
            raise self._no_run(run_id)
        return run_from_row(row)

    def statuses(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        """The status of each of `run_ids` (one query; unknown ids are left out)."""
        query = select(GRAPH_RUN.c.id, GRAPH_RUN.c.status).where(GRAPH_RUN.c.id.in_(list(run_ids)))
        with self._engine.connect() as conn:
            return {row.id: RunStatus(row.status) for row in conn.execute(query)}

    def exists(self, run_id: str) -> bool:
        with self._engine.connect() as conn:
            return conn.execute(select(GRAPH_RUN.c.id).where(GRAPH_RUN.c.id == run_id)).first() is not None

    def child(self, node_run_id: str, key: int) -> RunRecord | None:
        """The child run `key` of the node run `node_run_id`, if it was started."""
        query = (
            select(*_RUN_COLS)
            .select_from(_RUNS)
            .where(GRAPH_RUN.c.workflow_node_run_id == node_run_id, GRAPH_RUN.c.child_key == key)
        )
        with self._engine.connect() as conn:
            row = conn.execute(query).one_or_none()
        return None if row is None else run_from_row(row)

    def children(self, node_run_id: str) -> builtins.list[RunRecord]:
        """The child runs of the node run `node_run_id`, by key."""
        query = (
            select(*_RUN_COLS)
            .select_from(_RUNS)
            .where(GRAPH_RUN.c.workflow_node_run_id == node_run_id)
            .order_by(GRAPH_RUN.c.child_key)
        )
        with self._engine.connect() as conn:
            return [run_from_row(row) for row in conn.execute(query)]

    def child_outcomes(self, node_run_id: str) -> dict[int, tuple[str, RunStatus, Any]]:
        """Key -> (run id, status, output) of each child of `node_run_id`: what a MAP or LOOP
        resuming needs to know of its children, without their inputs."""
        query = select(GRAPH_RUN.c.child_key, GRAPH_RUN.c.id, GRAPH_RUN.c.status, GRAPH_RUN.c.output_json).where(
            GRAPH_RUN.c.workflow_node_run_id == node_run_id
        )
        with self._engine.connect() as conn:
            return {row.child_key: (row.id, RunStatus(row.status), row.output_json) for row in conn.execute(query)}

    def child_totals(self, node_run_id: str) -> tuple[int, int, float]:
        """Input tokens, output tokens and cost of all the child runs of `node_run_id`, summed:
        what the node that started them spent through them."""
        query = select(
            func.coalesce(func.sum(GRAPH_RUN.c.tokens_input), 0),
            func.coalesce(func.sum(GRAPH_RUN.c.tokens_output), 0),
            func.coalesce(func.sum(GRAPH_RUN.c.cost_usd), 0.0),
        ).where(GRAPH_RUN.c.workflow_node_run_id == node_run_id)
        with self._engine.connect() as conn:
            row = conn.execute(query).one()
        return int(row[0]), int(row[1]), float(row[2])

    def tree_usage(self, root_id: str) -> tuple[int, int, int]:
        """(child runs, node runs, characters of node-run records as stored) of the run `root_id`
        and every run under it: what its tree has used of its budget so far (skipped nodes, which
        execute nothing, are not node runs)."""
        tree = select(GRAPH_RUN.c.id).where(GRAPH_RUN.c.id == root_id).cte("tree", recursive=True)
        tree = tree.union_all(select(GRAPH_RUN.c.id).where(GRAPH_RUN.c.workflow_run_id == tree.c.id))
        records = [
            NODE_RUN.c.output_json,
            NODE_RUN.c.input_snapshot_json,
            NODE_RUN.c.attempts_json,
            NODE_RUN.c.error_json,
        ]
        size = sum((func.coalesce(func.length(cast(column, Text)), 0) for column in records), literal(0))
        nodes = select(func.count(), func.coalesce(func.sum(size), 0)).where(
            NODE_RUN.c.prompt_graph_run_id.in_(select(tree.c.id)), NODE_RUN.c.status != NodeStatus.SKIPPED.value
        )
        with self._engine.connect() as conn:
            runs = int(conn.execute(select(func.count()).select_from(tree)).scalar_one())
            node_runs, stored = conn.execute(nodes).one()
        return max(runs - 1, 0), int(node_runs), int(stored)

    def list(
        self,
        *,
        graph: str | None = None,
        status: str | None = None,
        limit: int = 100,
        offset: int = 0,
        children: bool = False,
        evaluations: bool = True,
    ) -> list[RunRecord]:
        """Newest first; `graph` is a graph id or slug, `status` a `RunStatus` value; `offset`
        skips that many (paging). Child runs are listed only with `children`; the runs
        evaluations made (`purpose` "evaluation") unless `evaluations` is False, as the listings
        people read ask."""
        query = select(*_RUN_COLS).select_from(_RUNS)
        if not children:
            query = query.where(GRAPH_RUN.c.workflow_run_id.is_(None))
        if not evaluations:
            query = query.where(GRAPH_RUN.c.purpose.is_(None))
        if graph is not None:
            query = query.where((GRAPH_RUN.c.prompt_graph_def_id == graph) | (GRAPH_DEF.c.slug == graph))
        if status is not None:
            if status not in RunStatus.__members__.values():
                choices = ", ".join(RunStatus)
                raise StoreError(f"unknown run status '{status}': use one of {choices}")
            query = query.where(GRAPH_RUN.c.status == RunStatus(status).value)
        query = query.order_by(GRAPH_RUN.c.created_at.desc(), GRAPH_RUN.c.id).limit(limit).offset(offset)
        with self._engine.connect() as conn:
            return [run_from_row(row) for row in conn.execute(query)]

    def abandoned(self, now: float, idle_s: float, limit: int = 100) -> builtins.list[RunRecord]:
        """Runs left `running` whose lease has run out (or was given up) and which nothing has
        touched for `idle_s`: what workers take over. Child runs are left to their parent's engine."""
        lease_gone = GRAPH_RUN.c.lease_expires_at.is_(None) | (GRAPH_RUN.c.lease_expires_at < now)
        query = (
            select(*_RUN_COLS)
            .select_from(_RUNS)
            .where(
                GRAPH_RUN.c.status == RunStatus.RUNNING.value,
                GRAPH_RUN.c.workflow_run_id.is_(None),
                GRAPH_RUN.c.updated_at < now - idle_s,
                lease_gone,
            )
            .order_by(GRAPH_RUN.c.updated_at)
            .limit(limit)
        )
        with self._engine.connect() as conn:
            return [run_from_row(row) for row in conn.execute(query)]

    def pending_since(
        self, before: float, after: tuple[float, str] | None = None, limit: int = 100
    ) -> builtins.list[RunRecord]:
        """Top-level runs still `pending`, last touched before `before`, in (updated_at, id)
        order from just past `after`: a sweep over the runs whose message a broker may have lost,
        one page at a time (announcing a run does not touch it, so a cursor is what moves on)."""
        query = (
            select(*_RUN_COLS)
            .select_from(_RUNS)
            .where(
                GRAPH_RUN.c.status == RunStatus.PENDING.value,
                GRAPH_RUN.c.workflow_run_id.is_(None),
                GRAPH_RUN.c.updated_at < before,
            )
            .order_by(GRAPH_RUN.c.updated_at, GRAPH_RUN.c.id)
            .limit(limit)
        )
        if after is not None:
            query = query.where(tuple_(GRAPH_RUN.c.updated_at, GRAPH_RUN.c.id) > tuple_(*after))
        with self._engine.connect() as conn:
            return [run_from_row(row) for row in conn.execute(query)]

    def due(self, now: float, limit: int = 100) -> builtins.list[tuple[str, float]]:
        """Runs parked by WAIT nodes whose time has come (paused, `wake_at` at or before `now`),
        the earliest first, each with its `wake_at`."""
        query = (
            select(GRAPH_RUN.c.id, GRAPH_RUN.c.wake_at)
            .where(
                GRAPH_RUN.c.status == RunStatus.PAUSED.value,
                GRAPH_RUN.c.wake_at <= now,
                GRAPH_RUN.c.workflow_run_id.is_(None),  # a child is continued by its parent
            )
            .order_by(GRAPH_RUN.c.wake_at)
            .limit(limit)
        )
        with self._engine.connect() as conn:
            return [(row.id, float(row.wake_at)) for row in conn.execute(query)]

    def next_wake(self) -> float | None:
        """The earliest time a paused run is due to continue (None: no run waits for a time)."""
        query = select(func.min(GRAPH_RUN.c.wake_at)).where(
            GRAPH_RUN.c.status == RunStatus.PAUSED.value, GRAPH_RUN.c.workflow_run_id.is_(None)
        )
        with self._engine.connect() as conn:
            value = conn.execute(query).scalar()
        return None if value is None else float(value)

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        expected: Collection[RunStatus] | None = None,
        output: Any = None,
        error: dict[str, Any] | None = None,
    ) -> bool:
        """Move the run to `status` if its current status is in `expected` (any status when None).

        `started_at` is set the first time the run becomes `running`; `completed_at` is set on
        a terminal status and cleared otherwise. `output`/`error` are written only when given.
        Returns False when the condition did not hold; raises NotFoundError for an unknown run.
        """
        status = RunStatus(status)
        now = time.time()
        values: dict[str, Any] = {"status": status.value, "updated_at": now}
        if status is RunStatus.RUNNING:
            values["started_at"] = func.coalesce(GRAPH_RUN.c.started_at, now)
        values["completed_at"] = now if status in TERMINAL_RUN_STATUSES else None
        if output is not None:
            values["output_json"] = output
        if error is not None:
            values["error_json"] = redact(error)  # errors quote what providers echo: see plait/redact.py
        stmt = update(GRAPH_RUN).where(GRAPH_RUN.c.id == run_id).values(**values)
        if expected is not None:
            stmt = stmt.where(GRAPH_RUN.c.status.in_([RunStatus(s).value for s in expected]))
        return self._update_run(run_id, stmt)

    # ---------------------------------------------------------------- leases

    def begin(
        self,
        run_id: str,
        owner: str,
        ttl_s: float,
        check: Callable[[RunRecord], None] | None = None,
        refused: tuple[type[Exception], ...] = (),
    ) -> tuple[RunRecord, bool]:
        """Start driving a run: take its lease and mark it `running`, in one transaction.

        Returns the record as it was before this call (`started_at` is None for a run that never
        started) and True when `owner` now holds the lease (free, its own, or expired: see
        `acquire_lease`); False when the run is terminal or another engine's live lease holds it.
        `check(record)` runs first, inside the transaction: what it raises propagates and nothing
        is changed (the engine refuses a graph it cannot execute before the run looks started),
        except that a `pending` run refused with one of `refused` fails (never started) or is
        paused (reopened by a correction) with the reason, in the same transaction: a refused
        run is never left `pending`.
        """
        now = time.time()
        refusal: Exception | None = None
        with self._statements.transaction() as session:
            rows = session.rows("run_for_update", {"run_id": run_id})
            if not rows:
                raise self._no_run(run_id)
            record = run_from_row(rows[0])
            held = record.lease_owner not in (None, owner) and (record.lease_expires_at or 0.0) >= now
            if record.status in TERMINAL_RUN_STATUSES or held:
                return record, False
            refusal = self._refusal(record, check, refused)
            if refusal is None:
                started = record.started_at if record.started_at is not None else now
                params = {"run_id": run_id, "started": started, "now": now, "owner": owner, "expires": now + ttl_s}
                session.execute("begin_run", params)
            elif record.status != RunStatus.PENDING:
                raise refusal  # a paused or interrupted run stays as it is, resumable
            else:
                fail = record.started_at is None
                error = redact({"kind": "refused", "message": str(refusal)})
                params = {
                    "run_id": run_id,
                    "error_json": error,
                    "now": now,
                    "status": (RunStatus.FAILED if fail else RunStatus.PAUSED).value,
                    "completed": now if fail else None,
                }
                session.execute("refuse_run", params)
        if refusal is not None:
            raise refusal  # once its failure is committed
        return record, True

    @staticmethod
    def _refusal(
        record: RunRecord, check: Callable[[RunRecord], None] | None, refused: tuple[type[Exception], ...]
    ) -> Exception | None:
        """What `check` refused the run with (one of `refused`); anything else propagates."""
        if check is None:
            return None
        try:
            check(record)
        except refused as exc:
            return exc
        return None

    def acquire_lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Become the one engine driving this run, for `ttl_s` seconds (renew before it runs out).

        Succeeds when nobody holds the lease, `owner` already does, or the holder's lease has
        expired (it crashed or hung): that is how `plait resume` takes over after a kill -9.
        """
        now = time.time()
        free = GRAPH_RUN.c.lease_owner.is_(None) | (GRAPH_RUN.c.lease_owner == owner)
        stmt = (
            update(GRAPH_RUN)
            .where(GRAPH_RUN.c.id == run_id, free | (GRAPH_RUN.c.lease_expires_at < now))
            .values(lease_owner=owner, lease_expires_at=now + ttl_s)
        )
        return self._update_run(run_id, stmt)

    def renew_lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Extend the lease; False if `owner` lost it (another engine took over after expiry)."""
        stmt = (
            update(GRAPH_RUN)
            .where(GRAPH_RUN.c.id == run_id, GRAPH_RUN.c.lease_owner == owner)
            .values(lease_expires_at=time.time() + ttl_s)
        )
        return self._update_run(run_id, stmt)

    def steal_lease(self, run_id: str, holder: str, owner: str, ttl_s: float) -> bool:
        """Take the lease from `holder` before it expires, when the caller knows that holder is
        dead (e.g. its process is gone on this machine). Fails if someone else holds it by now."""
        stmt = (
            update(GRAPH_RUN)
            .where(GRAPH_RUN.c.id == run_id, GRAPH_RUN.c.lease_owner == holder)
            .values(lease_owner=owner, lease_expires_at=time.time() + ttl_s)
        )
        return self._update_run(run_id, stmt)

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (no-op if `owner` does not hold it)."""
        stmt = (
            update(GRAPH_RUN)
            .where(GRAPH_RUN.c.id == run_id, GRAPH_RUN.c.lease_owner == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )
        self._update_run(run_id, stmt)

    def give_up(self, run_id: str, owner: str, *, active_s: float = 0.0, paused: bool = False) -> None:
        """An engine stops driving a run mid-way (a pause, a cancel, a lost lease, a shutdown): the
        nodes `owner` was executing go back to `pending` (whoever drives the run next, this engine
        included, executes them again; their results were never committed) and the lease is given up.
        `active_s`: how long it executed the run (added to the run's execution time). `paused`: a
        person stopped it elsewhere: it is `paused` in the same step, so that nothing takes it over
        as a run whose process died before that person's process records what they asked."""
        with self._writer.begin() as conn:
            if paused:
                conn.execute(
                    update(GRAPH_RUN)
                    .where(GRAPH_RUN.c.id == run_id, GRAPH_RUN.c.lease_owner == owner)
                    .where(GRAPH_RUN.c.status.in_([RunStatus.RUNNING.value, RunStatus.PENDING.value]))
                    .values(status=RunStatus.PAUSED.value)
                )
            conn.execute(
                update(NODE_RUN)
                .where(
                    NODE_RUN.c.prompt_graph_run_id == run_id,
                    NODE_RUN.c.status == NodeStatus.RUNNING.value,
                    NODE_RUN.c.owner == owner,
                )
                .values(status=NodeStatus.PENDING.value, owner=None)
            )
            conn.execute(
                update(GRAPH_RUN)
                .where(GRAPH_RUN.c.id == run_id, GRAPH_RUN.c.lease_owner == owner)
                .values(lease_owner=None, lease_expires_at=None, active_s=GRAPH_RUN.c.active_s + active_s)
            )

    def _update_run(self, run_id: str, stmt: Any) -> bool:
        with self._writer.begin() as conn:
            if conn.execute(stmt).rowcount == 1:
                return True
            if conn.execute(select(GRAPH_RUN.c.id).where(GRAPH_RUN.c.id == run_id)).first() is None:
                raise self._no_run(run_id)
        return False

    def _no_run(self, run_id: str) -> NotFoundError:
        return NotFoundError(f"no run '{run_id}' in this database: `plait runs list` shows the run ids it has")

    def resolve(self, ref: str) -> str:
        """The full run id of `ref`: an id, or a unique prefix of at least four characters of one."""
        return resolve_run_id(self._engine, ref)

    def resolve_node_run(self, ref: str) -> str:
        """The full node run id of `ref`: an id, or a unique prefix of at least four characters of one."""
        return resolve_node_run_id(self._engine, ref)

    # ------------------------------------------------------------- node runs

    def claim_node(self, run_id: str, node_id: str, activation: int, owner: str) -> NodeRunRecord | None:
        """Reserve one activation of a node for execution by `owner`; None means "do not run it".

        The INSERT is the arbitration: `UNIQUE(run, node, activation)` lets exactly one
        claimer win. When the row exists already:
        - completed / failed / skipped / overridden / stale → None: never execute twice
          (a rerun is a new activation);
        - `pending` (e.g. a HUMAN_REVIEW node waiting for a person) → claimed, by any owner,
          if still pending (one conditional UPDATE decides);
        - `running` under another owner → taken over (`claims` + 1) only if the caller holds
          the run's live lease. A lease is exclusive, so the previous owner has lost it: it
          crashed or hung past its lease. Without the lease the caller gets None, so two
          engines racing on a run never both execute a node;
        - `running` under the same owner → None: that owner is executing it already.
        """
        result: NodeRunRecord | None = self.nodes.write_one([Claim(run_id, node_id, activation, owner)])[0]
        return result

    def finish_node(
        self,
        node_run_id: str,
        owner: str,
        *,
        status: NodeStatus,
        output: Any = None,
        input_snapshot: dict[str, Any] | None = None,
        attempts: builtins.list[dict[str, Any]] | None = None,
        error: dict[str, Any] | None = None,
        tokens_input: int = 0,
        tokens_output: int = 0,
        cost_usd: float = 0.0,
    ) -> bool:
        """Commit a node's result in one transaction: the node run row, plus the run's token
        and cost totals. Only while the row is `running` and owned by `owner`; otherwise
        (taken over, finished already, unknown id) nothing is written and False is returned.
        `output_json` is written here once; afterwards the database refuses to change it.

        `status=pending` parks the activation without an output (a HUMAN_REVIEW node waiting
        for a person, its snapshot saved; `completed_at` stays NULL); a later `claim_node`
        picks it up again and its `finish_node` writes the output.
        """
        with self._engine.connect() as conn:
            run_id = conn.execute(
                select(NODE_RUN.c.prompt_graph_run_id).where(NODE_RUN.c.id == node_run_id)
            ).scalar_one_or_none()
        if run_id is None:
            return False
        finish = Finish(
            run_id,
            node_run_id,
            owner,
            NodeStatus(status),
            output,
            input_snapshot,
            attempts or (),
            error,
            tokens_input,
            tokens_output,
            cost_usd,
        )
        return bool(self.nodes.write_one([finish])[0])

    def record_skipped(self, run_id: str, node_id: str, activation: int) -> None:
        """Mark an activation `skipped` (all its incoming edges inactive); a no-op if it exists."""
        self.nodes.write_one([Skip(run_id, node_id, activation)])

    def node_run(self, node_run_id: str) -> NodeRunRecord:
        """One node run by its id (as `plait runs show --json` lists them)."""
        with self._engine.connect() as conn:
            row = conn.execute(select(NODE_RUN).where(NODE_RUN.c.id == node_run_id)).one_or_none()
        if row is None:
            raise NotFoundError(
                f"no node run '{node_run_id}' in this database: "
                "`plait runs show RUN_ID --json` lists the node runs of a run"
            )
        return node_run_from_row(row)

    def corrections_of(
        self,
        graph_id: str,
        node_id: str,
        *,
        exclude_run: str | None = None,
        exclude_runs: Collection[str] = (),
        exclude_node_runs: Collection[str] = (),
        before: float | None = None,
        limit: int = 200,
    ) -> builtins.list[NodeRunRecord]:
        """The overridden node runs of one node over every run of a graph, newest correction
        first: the few-shot examples an LLM_CALL node can learn from. Never those of runs an
        evaluation made; `exclude_runs`, `exclude_node_runs` and `before` (only corrections made
        earlier) leave out what an evaluated case must not learn from."""
        query = (
            select(NODE_RUN)
            .join(GRAPH_RUN, GRAPH_RUN.c.id == NODE_RUN.c.prompt_graph_run_id)
            .where(
                GRAPH_RUN.c.prompt_graph_def_id == graph_id,
                GRAPH_RUN.c.purpose.is_(None),
                NODE_RUN.c.node_def_id == node_id,
                NODE_RUN.c.override_json.is_not(None),
                NODE_RUN.c.input_snapshot_json.is_not(None),
            )
            .order_by(NODE_RUN.c.override_at.desc())
            .limit(limit)
        )
        if exclude_run is not None:
            query = query.where(NODE_RUN.c.prompt_graph_run_id != exclude_run)
        if exclude_runs:
            query = query.where(NODE_RUN.c.prompt_graph_run_id.not_in(list(exclude_runs)))
        if exclude_node_runs:
            query = query.where(NODE_RUN.c.id.not_in(list(exclude_node_runs)))
        if before is not None:
            query = query.where(NODE_RUN.c.override_at < before)
        with self._engine.connect() as conn:
            return [node_run_from_row(row) for row in conn.execute(query).all()]

    def node_runs(self, run_id: str) -> builtins.list[NodeRunRecord]:
        """Every activation of every node of the run, in the order they were created."""
        query = (
            select(NODE_RUN)
            .where(NODE_RUN.c.prompt_graph_run_id == run_id)
            .order_by(NODE_RUN.c.created_at, NODE_RUN.c.activation, NODE_RUN.c.node_def_id)
        )
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
            if not rows and conn.execute(select(GRAPH_RUN.c.id).where(GRAPH_RUN.c.id == run_id)).first() is None:
                raise self._no_run(run_id)
        return [node_run_from_row(row) for row in rows]
