"""Run housekeeping beside executing: the model a run uses (and its changes), cancelling a run
that is not executing, and deleting a run with everything that hangs off it.

Each is one transaction on the run row locked first, so it cannot interleave with an engine
beginning the run or a correction holding it. Messages are neutral; the CLI and the HTTP API
add the hint in their own words (a flag, a query parameter).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, delete, select, update

from plait.model.enums import TERMINAL_RUN_STATUSES, RunStatus
from plait.store.db import writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.models import FIELD_VERSION, GRAPH_RUN, LLM_CACHE, NODE_RUN


class RunInUse(StoreError):
    """The run is being executed (or corrected) by a live process: stop it there first."""


class RunEnded(StoreError):
    """The run has ended: it cannot be cancelled, and it is deleted only when forced (each surface
    says how: `--force`, `?force=true`)."""


@dataclass(frozen=True, slots=True)
class Deleted:
    """What a deletion removed."""

    run_id: str
    status: str
    node_runs: int
    ledger_versions: int
    cache_entries: int


class RunAdmin:
    """Changes a run's model, cancels a run, deletes a run. Each refuses (`RunInUse`) rather than
    interleave with a live engine or correction, and changes all or nothing."""

    def __init__(self, engine: Engine) -> None:
        self._writer = writer(engine)

    def set_llm(self, run_id: str, selection: dict[str, Any] | None, *, by: str) -> bool:
        """Make `selection` the run's model from now on; a change from the one it had is appended
        to its history (`by`: the command or route that asked). False when nothing changed."""
        with self._writer.begin() as conn:
            row = self._locked(conn, run_id)
            if row.llm_json == selection:
                return False
            change = {"at": time.time(), "by": by, "from": row.llm_json, "to": selection}
            history = [*(row.llm_history_json or []), change]
            values: dict[str, Any] = {"llm_json": selection}
            if row.llm_json is not None:  # the first record of an older run's model is no change
                values["llm_history_json"] = history
            conn.execute(update(GRAPH_RUN).where(GRAPH_RUN.c.id == run_id).values(**values))
        return True

    def cancel(self, run_id: str) -> str:
        """Stop a run for good (`cancelled`) that no live process executes; its status before."""
        now = time.time()
        with self._writer.begin() as conn:
            row = self._locked(conn, run_id)
            if RunStatus(row.status) in TERMINAL_RUN_STATUSES:
                raise RunEnded(f"run {run_id} has ended ({row.status}): there is nothing to cancel")
            self._refuse_live(row, now, "cancel")
            conn.execute(
                update(GRAPH_RUN)
                .where(GRAPH_RUN.c.id == run_id)
                .values(
                    status=RunStatus.CANCELLED.value,
                    error_json={"kind": "cancelled", "message": "cancelled by request"},
                    completed_at=now,
                    updated_at=now,
                    lease_owner=None,
                    lease_expires_at=None,
                )
            )
        return str(row.status)

    def delete(self, run_id: str, *, force: bool = False) -> Deleted:
        """Delete a run, its node runs, its ledger versions and the cached answers its calls
        produced, together. A run that has ended needs `force` (it is a record someone may want);
        a run a live process executes is refused."""
        with self._writer.begin() as conn:
            row = self._locked(conn, run_id)
            if RunStatus(row.status) in TERMINAL_RUN_STATUSES and not force:
                raise RunEnded(f"run {run_id} has ended ({row.status}): an ended run is deleted only when forced")
            self._refuse_live(row, time.time(), "delete")
            node_runs = select(NODE_RUN.c.id).where(NODE_RUN.c.prompt_graph_run_id == run_id).scalar_subquery()
            cached = conn.execute(delete(LLM_CACHE).where(LLM_CACHE.c.node_run_id.in_(node_runs))).rowcount
            versions = conn.execute(delete(FIELD_VERSION).where(FIELD_VERSION.c.prompt_graph_run_id == run_id)).rowcount
            nodes = conn.execute(delete(NODE_RUN).where(NODE_RUN.c.prompt_graph_run_id == run_id)).rowcount
            conn.execute(delete(GRAPH_RUN).where(GRAPH_RUN.c.id == run_id))
        return Deleted(run_id, str(row.status), nodes, versions, cached)

    def _locked(self, conn: Connection, run_id: str) -> Any:
        row = conn.execute(select(GRAPH_RUN).where(GRAPH_RUN.c.id == run_id).with_for_update()).one_or_none()
        if row is None:
            raise NotFoundError(f"no run '{run_id}' in this database")
        return row

    def _refuse_live(self, row: Any, now: float, action: str) -> None:
        """A live lease: an engine executes the run (or a correction holds it) right now."""
        if row.lease_owner is not None and (row.lease_expires_at or 0.0) >= now:
            raise RunInUse(
                f"cannot {action} run {row.id}: it is {row.status} and held by {row.lease_owner} "
                f"(its lease runs {row.lease_expires_at - now:.0f} s more)"
            )
