"""Runs, run leases and node runs: the engine's side of the store.

Correctness under concurrency rests on the database, not on locks in this process: every
state change is one conditional statement (`UPDATE ... WHERE status = ... AND owner = ...`,
`INSERT ... ON CONFLICT DO NOTHING`) whose row count says whether this caller won. The same
code path holds for threads, for processes on one SQLite file and for workers on PostgreSQL.

The hot path (`claim_node`, `finish_node`, `record_skipped`) uses Core statements built once
in `__init__` on the ORM tables, so a call costs one pool checkout, one or two statements and
a commit; on SQLite they run straight on the DBAPI connection (see `fastpath.py`).

Lease expiry and every timestamp use the clock of the process that writes them: engines on
several machines sharing one PostgreSQL store need synchronized clocks (NTP), and a lease TTL
well above the possible skew.
"""

from __future__ import annotations

import builtins
import time
import uuid
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, bindparam, exists, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.dml import UpdateBase

from plait.store.db import is_sqlite, json_dumps, writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.fastpath import Prepared, immediate
from plait.store.models import GRAPH_DEF, GRAPH_RUN, NODE_RUN
from plait.store.records import (
    TERMINAL_RUN_STATUSES,
    NodeRunRecord,
    NodeStatus,
    RunRecord,
    RunStatus,
    fresh_claim,
    node_run_from_row,
    run_from_row,
)

_RUN_COLS = (*GRAPH_RUN.c, GRAPH_DEF.c.slug)
_RUNS = GRAPH_RUN.join(GRAPH_DEF, GRAPH_DEF.c.id == GRAPH_RUN.c.prompt_graph_def_id)
_DONE = (NodeStatus.COMPLETED, NodeStatus.FAILED, NodeStatus.SKIPPED, NodeStatus.OVERRIDDEN, NodeStatus.STALE)


class RunRepository:
    def __init__(self, engine: Engine, db_name: str) -> None:
        self._engine = engine
        self._writer = writer(engine)
        self._db_name = db_name
        dialect_insert = sqlite_insert if is_sqlite(engine) else pg_insert
        unique = [NODE_RUN.c.prompt_graph_run_id, NODE_RUN.c.node_def_id, NODE_RUN.c.activation]
        # RETURNING, not rowcount: psycopg reports -1 for INSERT ... ON CONFLICT through SQLAlchemy.
        insert_node = (
            dialect_insert(NODE_RUN)
            .values(
                id=bindparam("b_id"),
                prompt_graph_run_id=bindparam("b_run"),
                node_def_id=bindparam("b_node"),
                activation=bindparam("b_activation"),
                status=bindparam("b_status"),
                owner=bindparam("b_owner"),
                claims=bindparam("b_claims"),
                created_at=bindparam("b_now"),
                started_at=bindparam("b_started"),
                completed_at=bindparam("b_completed"),
            )
            .on_conflict_do_nothing(index_elements=unique)
            .returning(NODE_RUN.c.id)
        )
        finish = (
            update(NODE_RUN)
            .where(
                NODE_RUN.c.id == bindparam("b_id"),
                NODE_RUN.c.status == NodeStatus.RUNNING.value,
                NODE_RUN.c.owner == bindparam("b_owner"),
            )
            .values(
                status=bindparam("b_status"),
                output_json=bindparam("b_output"),
                input_snapshot_json=bindparam("b_snapshot"),
                attempts_json=bindparam("b_attempts"),
                error_json=bindparam("b_error"),
                tokens_input=bindparam("b_tokens_in"),
                tokens_output=bindparam("b_tokens_out"),
                cost_usd=bindparam("b_cost"),
                completed_at=bindparam("b_completed"),
            )
        )
        run_of_node = select(NODE_RUN.c.prompt_graph_run_id).where(NODE_RUN.c.id == bindparam("b_id"))
        add_totals = (
            update(GRAPH_RUN)
            .where(GRAPH_RUN.c.id == run_of_node.scalar_subquery())
            .values(
                tokens_input=GRAPH_RUN.c.tokens_input + bindparam("b_tokens_in"),
                tokens_output=GRAPH_RUN.c.tokens_output + bindparam("b_tokens_out"),
                cost_usd=GRAPH_RUN.c.cost_usd + bindparam("b_cost"),
                updated_at=bindparam("b_now"),
            )
        )
        self._hot_statements: dict[str, UpdateBase] = {
            "insert_node": insert_node,
            "finish": finish,
            "add_totals": add_totals,
        }
        self._prepared: dict[str, Prepared] | None = None
        if is_sqlite(engine):
            json_params = frozenset({"b_output", "b_snapshot", "b_attempts", "b_error"})
            self._prepared = {
                name: Prepared(stmt, engine, json_params, json_dumps) for name, stmt in self._hot_statements.items()
            }

    @contextmanager
    def _hot(self) -> Iterator[Callable[[str, dict[str, Any]], Any]]:
        """One write transaction for the engine's hot path; yields `run(statement_name, params)`
        returning a cursor (`rowcount`, `fetchone()`) on either path."""
        if self._prepared is not None:
            prepared = self._prepared
            with immediate(self._engine) as raw:
                yield lambda name, params: prepared[name].execute(raw, params)
        else:
            statements = self._hot_statements
            with self._writer.begin() as conn:
                yield lambda name, params: conn.execute(statements[name], params)

    # ----------------------------------------------------------------- runs

    def create(self, *, def_id: str, graph_def_ver: int, schema_version: str, input: dict[str, Any]) -> RunRecord:
        """A `pending` run pinned to one stored graph version (seed 000 §6.2)."""
        run_id, now = str(uuid.uuid4()), time.time()
        row = {
            "id": run_id,
            "prompt_graph_def_id": def_id,
            "graph_def_ver": graph_def_ver,
            "schema_version": schema_version,
            "status": RunStatus.PENDING.value,
            "input_json": input,
            "context_json": {},
            "created_at": now,
            "updated_at": now,
        }
        try:
            with self._writer.begin() as conn:
                conn.execute(insert(GRAPH_RUN), row)
        except IntegrityError as exc:
            raise NotFoundError(
                f"cannot start a run of graph {def_id} version {graph_def_ver}: that graph version is not in "
                f"{self._db_name}; save the graph first (Store.graphs.save) and use the id and version it returns"
            ) from exc
        return self.get(run_id)

    def get(self, run_id: str) -> RunRecord:
        with self._engine.connect() as conn:
            row = conn.execute(select(*_RUN_COLS).select_from(_RUNS).where(GRAPH_RUN.c.id == run_id)).one_or_none()
        if row is None:
            raise self._no_run(run_id)
        return run_from_row(row)

    def list(self, *, graph: str | None = None, status: str | None = None, limit: int = 100) -> list[RunRecord]:
        """Newest first; `graph` is a graph id or slug, `status` a `RunStatus` value."""
        query = select(*_RUN_COLS).select_from(_RUNS)
        if graph is not None:
            query = query.where((GRAPH_RUN.c.prompt_graph_def_id == graph) | (GRAPH_DEF.c.slug == graph))
        if status is not None:
            if status not in RunStatus.__members__.values():
                choices = ", ".join(RunStatus)
                raise StoreError(f"unknown run status '{status}': use one of {choices}")
            query = query.where(GRAPH_RUN.c.status == RunStatus(status).value)
        query = query.order_by(GRAPH_RUN.c.created_at.desc(), GRAPH_RUN.c.id).limit(limit)
        with self._engine.connect() as conn:
            return [run_from_row(row) for row in conn.execute(query)]

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
            values["error_json"] = error
        stmt = update(GRAPH_RUN).where(GRAPH_RUN.c.id == run_id).values(**values)
        if expected is not None:
            stmt = stmt.where(GRAPH_RUN.c.status.in_([RunStatus(s).value for s in expected]))
        return self._update_run(run_id, stmt)

    # ---------------------------------------------------------------- leases

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

    def _update_run(self, run_id: str, stmt: Any) -> bool:
        with self._writer.begin() as conn:
            if conn.execute(stmt).rowcount == 1:
                return True
            if conn.execute(select(GRAPH_RUN.c.id).where(GRAPH_RUN.c.id == run_id)).first() is None:
                raise self._no_run(run_id)
        return False

    def _no_run(self, run_id: str) -> NotFoundError:
        return NotFoundError(f"no run '{run_id}' in {self._db_name}: `plait runs list` shows the run ids it has")

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
        now = time.time()
        params = _new_node_row(
            run_id, node_id, activation, NodeStatus.RUNNING, owner=owner, claims=1, now=now, started=now
        )
        try:
            with self._hot() as run:
                won = run("insert_node", params).fetchone() is not None
            if won:
                return fresh_claim(params)
            with self._writer.begin() as conn:
                return self._claim_existing(conn, run_id, node_id, activation, owner, now)
        except IntegrityError as exc:
            raise self._no_run(run_id) from exc

    def _claim_existing(
        self, conn: Any, run_id: str, node_id: str, activation: int, owner: str, now: float
    ) -> NodeRunRecord | None:
        key = (
            NODE_RUN.c.prompt_graph_run_id == run_id,
            NODE_RUN.c.node_def_id == node_id,
            NODE_RUN.c.activation == activation,
        )
        row = conn.execute(select(NODE_RUN.c.id, NODE_RUN.c.status, NODE_RUN.c.owner).where(*key)).one_or_none()
        if row is None or row.status in _DONE:
            return None
        if row.status == NodeStatus.RUNNING and row.owner == owner:
            return None
        claim = update(NODE_RUN).values(
            status=NodeStatus.RUNNING.value, owner=owner, claims=NODE_RUN.c.claims + 1, started_at=now
        )
        if row.status == NodeStatus.PENDING:
            stmt = claim.where(NODE_RUN.c.id == row.id, NODE_RUN.c.status == NodeStatus.PENDING.value)
        else:
            holds_lease = exists().where(
                GRAPH_RUN.c.id == run_id, GRAPH_RUN.c.lease_owner == owner, GRAPH_RUN.c.lease_expires_at > now
            )
            stmt = claim.where(
                NODE_RUN.c.id == row.id,
                NODE_RUN.c.status == NodeStatus.RUNNING.value,
                NODE_RUN.c.owner == row.owner,
                holds_lease,
            )
        if conn.execute(stmt).rowcount != 1:
            return None
        return node_run_from_row(conn.execute(select(NODE_RUN).where(NODE_RUN.c.id == row.id)).one())

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
        status = NodeStatus(status)
        if status is NodeStatus.RUNNING:
            raise ValueError("finish_node needs the status the node ends in, not 'running'")
        if status is NodeStatus.PENDING and output is not None:
            raise ValueError("a parked (pending) activation has no output yet: its output is written once, at the end")
        now = time.time()
        params = {
            "b_id": node_run_id,
            "b_owner": owner,
            "b_status": status.value,
            "b_output": output,
            "b_snapshot": input_snapshot,
            "b_attempts": attempts or [],
            "b_error": error,
            "b_tokens_in": tokens_input,
            "b_tokens_out": tokens_output,
            "b_cost": cost_usd,
            "b_now": now,
            "b_completed": None if status is NodeStatus.PENDING else now,
        }
        with self._hot() as run:
            if run("finish", params).rowcount != 1:
                return False
            if tokens_input or tokens_output or cost_usd:
                run("add_totals", params)
        return True

    def record_skipped(self, run_id: str, node_id: str, activation: int) -> None:
        """Mark an activation `skipped` (all its incoming edges inactive); a no-op if it exists."""
        now = time.time()
        params = _new_node_row(
            run_id, node_id, activation, NodeStatus.SKIPPED, owner=None, claims=0, now=now, completed=now
        )
        try:
            with self._hot() as run:
                run("insert_node", params)
        except IntegrityError as exc:
            raise self._no_run(run_id) from exc

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


def _new_node_row(
    run_id: str,
    node_id: str,
    activation: int,
    status: NodeStatus,
    *,
    owner: str | None,
    claims: int,
    now: float,
    started: float | None = None,
    completed: float | None = None,
) -> dict[str, object]:
    """Bind parameters of the fast-path INSERT of a new node run."""
    return {
        "b_id": str(uuid.uuid4()),
        "b_run": run_id,
        "b_node": node_id,
        "b_activation": activation,
        "b_status": status.value,
        "b_owner": owner,
        "b_claims": claims,
        "b_now": now,
        "b_started": started,
        "b_completed": completed,
    }
