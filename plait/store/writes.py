"""What the engine asks the store to write: the transitions of node runs and runs that a
`NodeWriter` (plait/store/node_writes.py) commits, many per transaction. Each says what it
writes and what it returns as its result."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from plait.model.enums import NodeStatus, RunStatus
from plait.store.db import Encoded
from plait.store.new_runs import CreateRun


@dataclass(frozen=True, slots=True)
class Claim:
    """Reserve one activation of a node for `owner`. Result: the claimed `NodeRunRecord`, or
    None for "do not run it" (see `RunRepository.claim_node` for the rules)."""

    run_id: str
    node_id: str
    activation: int
    owner: str


@dataclass(frozen=True, slots=True)
class Finish:
    """Commit a node's result while `owner` still holds it `running`. Result: True if written."""

    run_id: str
    node_run_id: str
    owner: str
    status: NodeStatus
    output: Any = None
    input_snapshot: dict[str, Any] | Encoded | None = None
    attempts: Sequence[dict[str, Any]] | Encoded = ()
    error: dict[str, Any] | Encoded | None = None
    """`output`, `input_snapshot`, `attempts` and `error` may come `Encoded` (redacted already)."""
    tokens_input: int = 0
    tokens_output: int = 0
    cost_usd: float = 0.0
    consumed: dict[str, int] | None = None
    """Ledger versions the node read (see `Version`)."""
    node_id: str | None = None
    """The node's id, for the `mid_commit` failpoint only (not written)."""

    def __post_init__(self) -> None:
        if self.status is NodeStatus.RUNNING:
            raise ValueError("a node finishes in the status it ends in, not 'running'")
        if self.status is NodeStatus.PENDING and self.output is not None:
            raise ValueError("a parked (pending) activation has no output yet: its output is written once, at the end")


@dataclass(frozen=True, slots=True)
class Version:
    """Append version `version` of an owner's value to the field ledger (`prompt_field_version`).
    `value` None with kind `execute`: the value is the output of `node_run_id`. Result: None;
    a version taken already (a racing writer) fails the unit (UNIQUE)."""

    run_id: str
    owner_id: str
    version: int
    kind: str
    by: str
    frozen: dict[str, Any]
    node_run_id: str | None = None
    value: Any = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Skip:
    """Mark an activation `skipped` (all its incoming edges inactive); nothing if it exists. Result: None."""

    run_id: str
    node_id: str
    activation: int


@dataclass(frozen=True, slots=True)
class EndRun:
    """Set the run's outcome and give its lease up, if `owner` holds the lease (and, with `seen`,
    no correction arrived since the engine saw that many). Result: True if written."""

    run_id: str
    owner: str
    status: RunStatus
    output: Any = None
    error: dict[str, Any] | None = None
    seen: int | None = None
    active_s: float = 0.0
    """Seconds this engine executed the run, added to the run's execution time."""
    wake_at: float | None = None
    """For a run paused by WAIT nodes: when it is due to continue."""


@dataclass(frozen=True, slots=True)
class Watch:
    """Read the run's count of corrections in the same transaction. Result: the count."""

    run_id: str


@dataclass(frozen=True, slots=True)
class Stale:
    """Mark a completed node run `stale` (it read a value corrected since). Result: None."""

    run_id: str
    node_run_id: str
    node_id: str | None = None
    """For the `node:stale` event the writer announces (not written)."""


@dataclass(frozen=True, slots=True)
class CachePut:
    """Remember a validated model answer under its request hash; a newer one replaces it (a node
    rerun explicitly was asked afresh, and later identical requests get that answer). Result: None."""

    run_id: str
    key: str
    provider: str
    model: str
    response: dict[str, Any]
    node_run_id: str


Write = CreateRun | Claim | Finish | Skip | EndRun | CachePut | Version | Watch | Stale
Unit = Sequence[Write]
