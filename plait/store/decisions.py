"""Resource decisions (`run_decision`): what the engine did to a run, or to one node of it,
because capacity was short. A node's decision names its node run; the node's id is read with
it (from the node run), so a decision is not written with anything the node run already says."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, Select, insert, select

from plait.store.db import writer
from plait.store.models import NODE_RUN, RUN_DECISION


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision: `action` (queue, pause, degrade, reject, execute) by `rule` (disk, memory,
    providers, capacity, cpu), why, and the probe it was made on; for a node's decision its node
    run (`node_run_id`) and, as read, its node (`node_id`); None for a decision on the run."""

    run_id: str
    action: str
    rule: str
    reason: str
    probe: dict[str, Any] | None = None
    node_run_id: str | None = None
    at: float = 0.0
    node_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


class DecisionRepository:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    def add(self, decision: Decision) -> None:
        row = {"run_id": decision.run_id, "node_run_id": decision.node_run_id, "at": decision.at or time.time(),
               "action": decision.action, "rule": decision.rule, "reason": decision.reason,
               "probe_json": decision.probe}  # fmt: skip
        with self._writer.begin() as conn:
            conn.execute(insert(RUN_DECISION).values(row))

    def of_run(self, run_id: str) -> list[Decision]:
        query = _with_node(select(RUN_DECISION, NODE_RUN.c.node_def_id)).where(RUN_DECISION.c.run_id == run_id)
        query = query.order_by(RUN_DECISION.c.id)
        with self._engine.connect() as conn:
            return [_decision(row) for row in conn.execute(query)]

    def recent(self, limit: int = 50) -> list[Decision]:
        query = _with_node(select(RUN_DECISION, NODE_RUN.c.node_def_id)).order_by(RUN_DECISION.c.id.desc()).limit(limit)
        with self._engine.connect() as conn:
            return [_decision(row) for row in conn.execute(query)]


def _with_node(query: Select[Any]) -> Select[Any]:
    """`query` over the decisions, joined to their node runs (a run's decision has none)."""
    return query.select_from(RUN_DECISION.outerjoin(NODE_RUN, NODE_RUN.c.id == RUN_DECISION.c.node_run_id))


def _decision(row: Any) -> Decision:
    return Decision(row.run_id, row.action, row.rule, row.reason, row.probe_json, row.node_run_id, row.at,
                    row.node_def_id)  # fmt: skip
