"""The run as a correction reads it (`HeldRun`), under the lease it holds while it checks and
writes (`Lease`), and the refusal every check raises (`CorrectionError`).

Kept apart from corrections.py, which decides what each correction changes: this is how the run
is read and held, the same for every correction.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any

from plait.engine.compiled import load_compiled
from plait.engine.state import CompiledRun
from plait.errors import PlaitError, Refusal
from plait.model.enums import RunStatus
from plait.model.nodes import NodeType
from plait.model.output_meta import strip_meta
from plait.store import NodeRunRecord, RunRecord, Store, StoreError, current_activations
from plait.store.ledger import Head


class CorrectionError(PlaitError):
    """The correction is refused; nothing was written. `details` lists e.g. schema errors."""


@dataclass
class HeldRun:
    """A run as a correction sees it, read under its lease."""

    record: RunRecord
    compiled: CompiledRun
    newest: dict[str, NodeRunRecord]
    heads: dict[str, Head]

    def node(self, node_id: str) -> NodeRunRecord:
        if node_id not in self.compiled.nodes:
            known = ", ".join(sorted(self.compiled.nodes))
            raise CorrectionError(
                f"run {self.record.id} has no node '{node_id}'", f"its nodes: {known}", kind=Refusal.NOT_FOUND
            )
        rec = self.newest.get(node_id)
        if rec is None:
            raise CorrectionError(
                f"node '{node_id}' of run {self.record.id} has not run yet",
                "correct a node that completed; `plait runs show RUN_ID` shows the node states",
            )
        return rec

    def readers(self, node_id: str) -> list[str]:
        """What reads `node_id`'s value: its out-edges' targets, and every node whose newest
        activation recorded reading it (an expression, a template or a prompt script naming it
        from further down)."""
        targets = [
            e.target_node_id for e in self.compiled.out_edges[node_id] if e.target_node_id in self.compiled.nodes
        ]
        named = [n for n, rec in self.newest.items() if n != node_id and node_id in (rec.consumed or {})]
        return list(dict.fromkeys([*targets, *named]))

    def version(self, owner: str) -> int:
        return self.heads[owner].version if owner in self.heads else 0

    def frozen(self, owner: str) -> dict[str, Any]:
        return self.heads[owner].frozen if owner in self.heads else {}


def load_run(store: Store, run_id: str) -> HeldRun:
    record = store.runs.get(run_id)
    compiled = load_compiled(store, record.graph_id, record.graph_version, record.body)
    newest = current_activations(store.runs.node_runs(run_id))
    return HeldRun(record, compiled, newest, store.ledger.heads(run_id))


def turns_branch(run: HeldRun, node_id: str, value: Any) -> bool:
    """Whether `value` makes a CONDITION take another branch than its current output does."""
    if run.compiled.nodes[node_id].type != NodeType.CONDITION:
        return False
    before = run.newest[node_id].effective_output
    return isinstance(value, dict) and isinstance(before, dict) and value.get("branch") != before.get("branch")


def run_output(run: HeldRun, changed: dict[str, Any]) -> Any:
    """The run's output with the newest effective outputs (an exit node's override included)."""
    exits = run.compiled.output_nodes
    values = {
        e: strip_meta(changed[e] if e in changed else run.newest[e].effective_output)
        for e in exits
        if e in changed or (e in run.newest and run.newest[e].status.has_output)
    }
    if len(exits) == 1:
        return values.get(exits[0])
    return values


def _owner() -> str:
    return f"correction:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Lease:
    """`with Lease(store, run_id, ...) as (owner, run)`: the run's lease for one correction,
    waited for up to `wait_s` while another correction holds it. A run an engine is executing
    is refused, or with `live_ok` read without the lease (`owner` None: the correction is
    written beside the engine, see `CorrectionWriter.apply`)."""

    def __init__(self, store: Store, run_id: str, *, live_ok: bool, wait_s: float, lease_ttl_s: float):
        self.store = store
        self.run_id = run_id
        self.live_ok = live_ok
        self.wait_s = wait_s
        self.lease_ttl_s = lease_ttl_s
        self.owner: str | None = _owner()

    def __enter__(self) -> tuple[str | None, HeldRun]:
        runs = self.store.runs
        try:
            record = runs.get(self.run_id)
        except StoreError as exc:
            raise CorrectionError(str(exc), "`plait runs list` shows the run ids", kind=Refusal.NOT_FOUND) from None
        if self.live_ok and _engine_driving(record):
            self.owner = None
            return None, load_run(self.store, self.run_id)
        deadline = time.monotonic() + self.wait_s
        owner = self.owner
        assert owner is not None
        while not runs.acquire_lease(self.run_id, owner, self.lease_ttl_s):
            record = runs.get(self.run_id)
            if time.monotonic() > deadline:
                raise CorrectionError(
                    f"run {self.run_id} is busy: {record.lease_owner} holds it",
                    "wait for the run to end or pause, then correct it",
                )
            time.sleep(0.05)
        record = runs.get(self.run_id)
        if record.status == RunStatus.RUNNING:
            runs.release_lease(self.run_id, owner)
            raise CorrectionError(
                f"run {self.run_id} is marked running but no engine is executing it (it was killed)",
                f"finish it with `plait resume {self.run_id}`, then correct it",
            )
        return owner, load_run(self.store, self.run_id)

    def __exit__(self, *exc: object) -> None:
        if self.owner is not None:
            self.store.runs.release_lease(self.run_id, self.owner)


def _engine_driving(record: RunRecord) -> bool:
    """An engine holds the run's live lease (a correction's lease is not an engine's)."""
    owner = record.lease_owner
    live = owner is not None and (record.lease_expires_at or 0.0) >= time.time()
    return record.status == RunStatus.RUNNING and live and not str(owner).startswith("correction:")
