"""Node-run writes, batched: one transaction commits the transitions of many nodes of many runs.

This is the engine's hot path. When a node finishes, its result, the claims of the successors
it makes ready and the skips it propagates form one *unit*; the engine hands every unit
submitted in the same event-loop turn to `NodeWriter.write`, which commits them all in one
transaction (a group commit). Claims are still committed before their nodes execute, so the
exactly-once rules of `RunRepository.claim_node` hold unchanged.

Inside a unit the writes run in order, and a `Finish` or `EndRun` that changes no row (the
caller no longer owns the node or the run) ends the unit: what follows it depends on it and
is not written. When the whole batch fails (a unit names an unknown run, ...), every unit is
retried in a transaction of its own, so one bad unit never sinks the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Engine, exists, select, update
from sqlalchemy.exc import IntegrityError

from plait.failpoints import armed, failpoint
from plait.model.enums import TERMINAL_RUN_STATUSES, NodeStatus, RunStatus
from plait.redact import redact
from plait.store.db import Encoded, json_dumps_once, writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.fastpath import Statements
from plait.store.faults import full, store_full, transient
from plait.store.models import GRAPH_RUN, NODE_RUN
from plait.store.new_runs import RUN_JSON_COLUMNS, CreateRun, NewRun
from plait.store.node_statements import new_node_row, node_statements
from plait.store.records import NodeRunRecord, fresh_claim, node_run_from_row
from plait.store.writes import CachePut, Claim, EndRun, Finish, Skip, Stale, Unit, Version, Watch, Write

_DONE = (NodeStatus.COMPLETED, NodeStatus.FAILED, NodeStatus.SKIPPED, NodeStatus.OVERRIDDEN, NodeStatus.STALE)


Runner = Callable[[str, dict[str, Any]], Any]
"""`run(statement_name, params)` inside the open transaction; returns a cursor (`rowcount`, `fetchone()`)."""


class NodeWriter:
    """Commits units of node-run writes, a batch of them per transaction. A unit's writes run in
    order and the unit ends at a `Finish` or `EndRun` that changes no row, since the rest depends
    on it. A unit that raises writes nothing, and never keeps the other units of its batch from
    being committed."""

    def __init__(
        self,
        engine: Engine,
        no_run: Callable[[str], NotFoundError],
        refused: Callable[[NewRun, str, IntegrityError], Exception],
    ) -> None:
        """`no_run(run_id)`: the error for a unit naming an unknown run; `refused(run, run_id,
        exc)`: the error for a `CreateRun` that broke a constraint."""
        self._writer = writer(engine)
        self._url = engine.url
        self._no_run = no_run
        self._refused = refused
        json_params = RUN_JSON_COLUMNS | frozenset(
            {"b_output", "b_snapshot", "b_attempts", "b_error", "b_response", "b_consumed", "b_value", "b_frozen"}
        )
        self._statements = Statements(engine, node_statements(engine), json_params, json_dumps_once, raw_postgres=True)

    def write(self, units: Sequence[Unit]) -> list[list[Any] | Exception]:
        """Commit `units` in one transaction; per unit, the results of its writes, or the error
        that unit alone raised (then nothing of it was written). A fault of the database
        (`faults.transient`) is every unit's error, for the caller to retry: nothing was written."""
        try:
            return list(self._commit(units))
        except Exception as exc:
            if full(exc):  # the transaction rolled back: every unit's error, none retried
                return [store_full(self._url, exc) for _ in units]
            if len(units) == 1 or transient(exc):
                return [self._named(unit, exc) for unit in units]
        outcomes: list[list[Any] | Exception] = []
        for unit in units:
            try:
                outcomes.extend(self._commit([unit]))
            except Exception as exc:
                outcomes.append(self._named(unit, exc))
        return outcomes

    def close(self) -> None:
        self._statements.close()

    def write_one(self, unit: Unit) -> list[Any]:
        """One unit in its own transaction; raises what it raised."""
        outcome = self.write([unit])[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    # -------------------------------------------------------------------------------------------

    def _named(self, unit: Unit, exc: Exception) -> Exception:
        """A unit creating its run failed as creating a run fails; any other foreign-key failure
        means the unit names a run that does not exist: say which."""
        if isinstance(exc, IntegrityError) and unit and isinstance(unit[0], CreateRun):
            return self._refused(unit[0].run, unit[0].run_id, exc)
        if isinstance(exc, IntegrityError):
            runs = {w.run_id for w in unit}
            if len(runs) == 1:
                return self._no_run(runs.pop())
        return exc

    def _commit(self, units: Sequence[Unit]) -> list[list[Any] | Exception]:
        now = time.time()
        found: list[tuple[int, int, Claim]] = []
        outcomes: list[list[Any]] = []
        totals: dict[str, list[float]] = {}
        watched: dict[str, list[tuple[int, int]]] = {}
        """Where each run's count of corrections goes: read once per transaction, at its end (in
        the UPDATE of the run's totals when there is one), however many units watch it."""
        with self._statements.transaction() as session:
            run = session.execute
            for u, unit in enumerate(units):
                results: list[Any] = []
                for write in unit:
                    if isinstance(write, Watch):
                        watched.setdefault(write.run_id, []).append((u, len(results)))
                        results.append(None)
                        continue
                    result = _apply(run, write, now, totals)
                    results.append(result)
                    if result is False:  # a Finish/EndRun that found nothing to change: the rest depends on it
                        results.extend([None] * (len(unit) - len(results)))
                        break
                    if result is _EXISTS:
                        results[-1] = None
                        found.append((u, len(results) - 1, write))  # type: ignore[arg-type]
                outcomes.append(results)
            counts = _totals_written(run, totals, set(watched), now)
            for run_id, places in watched.items():
                if run_id not in counts:
                    row = run("watch", {"b_run": run_id}).fetchone()
                    counts[run_id] = int(row[0]) if row is not None else None
                for u, index in places:
                    outcomes[u][index] = counts[run_id]
            if armed():  # a durability test: every write sent, COMMIT not yet
                for write in (w for unit in units for w in unit):
                    if isinstance(write, Finish) and write.node_id is not None:
                        failpoint("mid_commit", write.node_id)
        done: list[list[Any] | Exception] = list(outcomes)
        for u, index, claim in found:  # rare (resume, races): the row exists; decide in a transaction of its own
            try:
                outcomes[u][index] = self._claim_lost(claim)
            except Exception as exc:  # the unit is committed but for this claim: never to be written again
                done[u] = StoreError(f"claiming node '{claim.node_id}' of run {claim.run_id} failed: {exc}")
        return done

    def _claim_lost(self, claim: Claim, attempts: int = 3) -> NodeRunRecord | None:
        """`_claim_existing`, tried again on a fault of the database."""
        for attempt in range(attempts):
            try:
                return self._claim_existing(claim, time.time())
            except Exception as exc:
                if attempt == attempts - 1 or not transient(exc):
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def _claim_existing(self, claim: Claim, now: float) -> NodeRunRecord | None:
        key = (
            NODE_RUN.c.prompt_graph_run_id == claim.run_id,
            NODE_RUN.c.node_def_id == claim.node_id,
            NODE_RUN.c.activation == claim.activation,
        )
        with self._writer.begin() as conn:
            row = conn.execute(select(NODE_RUN.c.id, NODE_RUN.c.status, NODE_RUN.c.owner).where(*key)).one_or_none()
            if row is None or row.status in _DONE:
                return None
            if row.status == NodeStatus.RUNNING and row.owner == claim.owner:
                return None
            take = update(NODE_RUN).values(
                status=NodeStatus.RUNNING.value, owner=claim.owner, claims=NODE_RUN.c.claims + 1, started_at=now
            )
            if row.status == NodeStatus.PENDING:
                stmt = take.where(NODE_RUN.c.id == row.id, NODE_RUN.c.status == NodeStatus.PENDING.value)
            else:  # its executor's process died (or hung past the lease) while executing it: one more lost
                take = take.values(lost=NODE_RUN.c.lost + 1)
                holds_lease = exists().where(
                    GRAPH_RUN.c.id == claim.run_id,
                    GRAPH_RUN.c.lease_owner == claim.owner,
                    GRAPH_RUN.c.lease_expires_at > now,
                )
                stmt = take.where(
                    NODE_RUN.c.id == row.id,
                    NODE_RUN.c.status == NodeStatus.RUNNING.value,
                    NODE_RUN.c.owner == row.owner,
                    holds_lease,
                )
            if conn.execute(stmt).rowcount != 1:
                return None
            return node_run_from_row(conn.execute(select(NODE_RUN).where(NODE_RUN.c.id == row.id)).one())


_EXISTS = object()
"""A claim whose INSERT found the row already there."""


def _totals_written(
    run: Runner, totals: dict[str, list[float]], watched: set[str], now: float
) -> dict[str, int | None]:
    """Add what this transaction's nodes spent to their runs' totals; the count of corrections
    of each watched run among them, which the same UPDATE returns (a statement fewer)."""
    counts: dict[str, int | None] = {}
    for run_id, (tokens_in, tokens_out, cost) in totals.items():
        params = {"b_run": run_id, "b_tokens_in": tokens_in, "b_tokens_out": tokens_out, "b_cost": cost, "b_now": now}
        if run_id in watched:
            row = run("add_totals_watch", params).fetchone()
            counts[run_id] = int(row[0]) if row is not None else None
        else:
            run("add_totals", params)
    return counts


def _apply(run: Runner, write: Write, now: float, totals: dict[str, list[float]]) -> Any:
    if isinstance(write, CreateRun):
        run("insert_run", write.row)
        return None
    if isinstance(write, Claim):
        failpoint("before_claim", write.node_id)  # inside the unit's transaction: see plait/failpoints.py
        params = new_node_row(
            write.run_id,
            write.node_id,
            write.activation,
            NodeStatus.RUNNING,
            owner=write.owner,
            claims=1,
            now=now,
            started=now,
        )
        return fresh_claim(params) if run("insert_node", params).fetchone() is not None else _EXISTS
    if isinstance(write, Finish):
        params = {
            "b_id": write.node_run_id,
            "b_owner": write.owner,
            "b_status": write.status.value,
            "b_output": write.output,
            "b_snapshot": write.input_snapshot,
            # the last line of defence (see plait/redact.py), unless its writer encoded it redacted already
            "b_attempts": write.attempts if type(write.attempts) is Encoded else redact(list(write.attempts)),
            "b_error": write.error if type(write.error) is Encoded else redact(write.error),
            "b_tokens_in": write.tokens_input,
            "b_tokens_out": write.tokens_output,
            "b_cost": write.cost_usd,
            "b_completed": None if write.status is NodeStatus.PENDING else now,
            "b_consumed": write.consumed,
        }
        if run("finish", params).rowcount != 1:
            return False
        if write.tokens_input or write.tokens_output or write.cost_usd:
            total = totals.setdefault(write.run_id, [0, 0, 0.0])
            total[0] += write.tokens_input
            total[1] += write.tokens_output
            total[2] += write.cost_usd
        return True
    if isinstance(write, CachePut):
        params = {
            "b_key": write.key,
            "b_provider": write.provider,
            "b_model": write.model,
            "b_response": write.response,
            "b_node_run": write.node_run_id,
            "b_now": now,
        }
        run("cache_put", params)
        return None
    if isinstance(write, Version):
        params = {
            "b_run": write.run_id,
            "b_owner_id": write.owner_id,
            "b_version": write.version,
            "b_kind": write.kind,
            "b_value": write.value,
            "b_frozen": write.frozen,
            "b_node_run": write.node_run_id,
            "b_by": write.by,
            "b_reason": write.reason,
            "b_now": now,
        }
        run("add_version", params)
        return None
    if isinstance(write, Stale):
        run("stale", {"b_id": write.node_run_id})
        return None
    if isinstance(write, Skip):
        params = new_node_row(
            write.run_id,
            write.node_id,
            write.activation,
            NodeStatus.SKIPPED,
            owner=None,
            claims=0,
            now=now,
            completed=now,
        )
        run("skip_node", params)
        return None
    assert isinstance(write, EndRun), f"{type(write).__name__} is not applied one by one"  # a Watch is read at the end
    params = {
        "b_run": write.run_id,
        "b_owner": write.owner,
        "b_status": RunStatus(write.status).value,
        "b_output": write.output,
        "b_error": redact(write.error),
        "b_now": now,
        "b_completed": now if write.status in TERMINAL_RUN_STATUSES else None,
        "b_active": write.active_s,
        "b_wake": write.wake_at,
    }
    # the tokens and cost this transaction added to the run so far go in the same UPDATE (a run
    # that ended finishes no more nodes), saving the transaction's separate `add_totals` for it
    tokens_in, tokens_out, cost = totals.get(write.run_id, (0, 0, 0.0))
    params.update(b_tokens_in=tokens_in, b_tokens_out=tokens_out, b_cost=cost)
    if write.seen is not None:
        ended = run("end_run_seen", {**params, "b_seen": write.seen}).rowcount == 1
    else:
        ended = run("end_run", params).rowcount == 1
    if ended:
        totals.pop(write.run_id, None)
    return ended
