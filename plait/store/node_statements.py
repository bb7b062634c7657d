"""The SQL of the node-run writes (`NodeWriter`'s statements, prepared once per engine): a new
node run's row, a claim, a finish, a skip, a run's end and totals, the ledger and the cache."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, Select, bindparam, insert, select, update
from sqlalchemy.sql.dml import UpdateBase

from plait.model.enums import NodeStatus
from plait.store.db import conflict_insert, new_id
from plait.store.models import FIELD_VERSION, GRAPH_RUN, LLM_CACHE, NODE_RUN
from plait.store.new_runs import INSERT_RUN


def new_node_row(
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
    """Bind parameters of the INSERT of a new node run."""
    return {
        "b_id": new_id(),
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


def node_statements(engine: Engine) -> dict[str, UpdateBase | Select[Any]]:
    dialect_insert = conflict_insert(engine)
    unique = [NODE_RUN.c.prompt_graph_run_id, NODE_RUN.c.node_def_id, NODE_RUN.c.activation]
    # RETURNING, not rowcount: psycopg reports -1 for INSERT ... ON CONFLICT through SQLAlchemy.
    new_row = dialect_insert(NODE_RUN).values(
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
    insert_node = new_row.on_conflict_do_nothing(index_elements=unique).returning(NODE_RUN.c.id)
    # A skip also settles an activation queued by a rerun (a `pending` row without an owner).
    skip_node = new_row.on_conflict_do_update(
        index_elements=unique,
        set_={"status": new_row.excluded.status, "completed_at": new_row.excluded.completed_at},
        where=(NODE_RUN.c.status == NodeStatus.PENDING.value) & NODE_RUN.c.input_snapshot_json.is_(None),
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
            consumed_json=bindparam("b_consumed"),
        )
    )
    add_version = insert(FIELD_VERSION).values(
        prompt_graph_run_id=bindparam("b_run"),
        owner_id=bindparam("b_owner_id"),
        version=bindparam("b_version"),
        kind=bindparam("b_kind"),
        value_json=bindparam("b_value"),
        frozen_json=bindparam("b_frozen"),
        node_run_id=bindparam("b_node_run"),
        by=bindparam("b_by"),
        reason=bindparam("b_reason"),
        at=bindparam("b_now"),
    )
    add_totals = (
        update(GRAPH_RUN)
        .where(GRAPH_RUN.c.id == bindparam("b_run"))
        .values(
            tokens_input=GRAPH_RUN.c.tokens_input + bindparam("b_tokens_in"),
            tokens_output=GRAPH_RUN.c.tokens_output + bindparam("b_tokens_out"),
            cost_usd=GRAPH_RUN.c.cost_usd + bindparam("b_cost"),
            updated_at=bindparam("b_now"),
        )
    )
    end_run = (
        update(GRAPH_RUN)
        .where(GRAPH_RUN.c.id == bindparam("b_run"), GRAPH_RUN.c.lease_owner == bindparam("b_owner"))
        .values(
            status=bindparam("b_status"),
            output_json=bindparam("b_output"),
            error_json=bindparam("b_error"),
            completed_at=bindparam("b_completed"),
            updated_at=bindparam("b_now"),
            lease_owner=None,
            lease_expires_at=None,
            active_s=GRAPH_RUN.c.active_s + bindparam("b_active"),
            wake_at=bindparam("b_wake"),
            tokens_input=GRAPH_RUN.c.tokens_input + bindparam("b_tokens_in"),
            tokens_output=GRAPH_RUN.c.tokens_output + bindparam("b_tokens_out"),
            cost_usd=GRAPH_RUN.c.cost_usd + bindparam("b_cost"),
        )
    )
    end_run_seen = end_run.where(GRAPH_RUN.c.corrections == bindparam("b_seen"))
    watch = select(GRAPH_RUN.c.corrections).where(GRAPH_RUN.c.id == bindparam("b_run"))
    stale = (
        update(NODE_RUN)
        .where(NODE_RUN.c.id == bindparam("b_id"), NODE_RUN.c.status == NodeStatus.COMPLETED.value)
        .values(status=NodeStatus.STALE.value)
    )
    cache_put = dialect_insert(LLM_CACHE).values(
        key=bindparam("b_key"),
        provider=bindparam("b_provider"),
        model=bindparam("b_model"),
        response_json=bindparam("b_response"),
        node_run_id=bindparam("b_node_run"),
        created_at=bindparam("b_now"),
    )
    cache_put = cache_put.on_conflict_do_update(  # the newest validated answer wins: an explicit rerun asked afresh
        index_elements=[LLM_CACHE.c.key],
        set_={
            "provider": cache_put.excluded.provider,
            "model": cache_put.excluded.model,
            "response_json": cache_put.excluded.response_json,
            "node_run_id": cache_put.excluded.node_run_id,
            "created_at": cache_put.excluded.created_at,
        },
    )
    return {
        "insert_run": INSERT_RUN,
        "insert_node": insert_node,
        "skip_node": skip_node,
        "finish": finish,
        "add_totals": add_totals,
        "add_totals_watch": add_totals.returning(GRAPH_RUN.c.corrections),
        "end_run": end_run,
        "end_run_seen": end_run_seen,
        "watch": watch,
        "stale": stale,
        "cache_put": cache_put,
        "add_version": add_version,
    }
