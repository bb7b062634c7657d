"""Reading the field ledger: the versions of every value in a run.

The ledger is written in the same transactions as what it records: the engine appends an
`execute` version (and any `freeze` versions its consumption triggers) with each node's
result (`writes.Version`); corrections append `override`, `review` and `rollback`
versions with their change (`plait.store.corrections`). An owner is `input` or a node id;
its field `f` at version n is `value[f]` of that version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, select

from plait.store.models import FIELD_VERSION, NODE_RUN

INPUT = "input"
"""The owner id of the run input."""
WHOLE = "*"
"""The frozen-map key that freezes an owner's whole value."""


@dataclass(frozen=True, slots=True)
class FieldVersion:
    """One version of an owner's value: `{version, value, frozen, by, at, reason}`."""

    run_id: str
    owner_id: str
    version: int
    kind: str
    value: Any
    frozen: dict[str, Any]
    node_run_id: str | None
    by: str
    reason: str | None
    at: float

    def field(self, name: str | None) -> Any:
        """The value of one top-level field (None: the whole value)."""
        if name is None:
            return self.value
        return self.value.get(name) if isinstance(self.value, dict) else None

    def frozen_field(self, name: str | None) -> dict[str, Any] | None:
        """Who froze the field (or the whole value), when and by which policy; None if writable."""
        if WHOLE in self.frozen:
            return dict(self.frozen[WHOLE])
        if name is None:
            return dict(next(iter(self.frozen.values()))) if self.frozen else None
        entry = self.frozen.get(name)
        return dict(entry) if entry is not None else None


@dataclass(frozen=True, slots=True)
class Head:
    """An owner's newest version number and frozen fields (what the engine keeps in memory)."""

    version: int
    frozen: dict[str, Any]


class LedgerRepository:
    """Reads the field ledger of a run. It never writes: versions are appended in the same
    transactions as the results and corrections they record."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def heads(self, run_id: str) -> dict[str, Head]:
        """The newest version of every owner of the run."""
        query = (
            select(FIELD_VERSION.c.owner_id, FIELD_VERSION.c.version, FIELD_VERSION.c.frozen_json)
            .where(FIELD_VERSION.c.prompt_graph_run_id == run_id)
            .order_by(FIELD_VERSION.c.owner_id, FIELD_VERSION.c.version)
        )
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        return {row.owner_id: Head(row.version, dict(row.frozen_json or {})) for row in rows}

    def history(self, run_id: str, owner_id: str | None = None) -> list[FieldVersion]:
        """Every version (of one owner, or of all), oldest first, values resolved: an `execute`
        version's value is its node run's output; a `freeze` keeps the value before it."""
        query = (
            select(FIELD_VERSION, NODE_RUN.c.output_json)
            .outerjoin(NODE_RUN, NODE_RUN.c.id == FIELD_VERSION.c.node_run_id)
            .where(FIELD_VERSION.c.prompt_graph_run_id == run_id)
            .order_by(FIELD_VERSION.c.owner_id, FIELD_VERSION.c.version)
        )
        if owner_id is not None:
            query = query.where(FIELD_VERSION.c.owner_id == owner_id)
        with self._engine.connect() as conn:
            rows = conn.execute(query).all()
        versions: list[FieldVersion] = []
        last: dict[str, Any] = {}
        for row in rows:
            if row.kind == "execute":
                value = row.output_json
            elif row.kind == "freeze":
                value = last.get(row.owner_id)
            else:
                value = row.value_json
            last[row.owner_id] = value
            versions.append(
                FieldVersion(
                    run_id=run_id,
                    owner_id=row.owner_id,
                    version=row.version,
                    kind=row.kind,
                    value=value,
                    frozen=dict(row.frozen_json or {}),
                    node_run_id=row.node_run_id,
                    by=row.by,
                    reason=row.reason,
                    at=row.at,
                )
            )
        return versions
