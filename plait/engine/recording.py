"""What the scheduler writes and announces once it has decided: a node's result as its `Finish`
write, its response-cache entry and its event, and how the run ends (`Verdict`).

Kept apart from scheduler.py, which decides when these are written (claims, the group commit,
corrections taken up): these only turn a result or the run state into writes and events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plait.engine.events import NodeCompleted, NodeFailed, NodeWaiting
from plait.engine.runtime import NodeResult
from plait.engine.state import Phase, RunState
from plait.model.enums import NodeStatus, RunStatus
from plait.model.limits import fine_text, storable
from plait.redact import holds_no_secret, redact, redact_secrets, redacts_nothing
from plait.store.db import Encoded, encoded
from plait.store.writes import CachePut, Finish, Write

if TYPE_CHECKING:
    from plait.engine.events import EventBus


@dataclass(frozen=True, slots=True)
class Records:
    """A node result's records encoded as the store writes them (attempts and error redacted),
    and how many characters they take: measured once, and written as they are."""

    output: Encoded | None
    snapshot: Encoded | None
    attempts: Encoded
    error: Encoded | None
    size: int


def encode_records(result: NodeResult) -> Records:
    """`result`'s records as `Records` (None stays None: SQL NULL, not JSON `null`): the output
    as `guard.committable` checked and masked it, the snapshot storable and without registered
    secrets, the attempts and the error redacted as well."""
    output = None if result.output is None else encoded(result.output)
    snapshot = None if result.snapshot is None else record_text(result.snapshot)
    error = None if result.error is None else record_text(result.error, scrub=True)
    attempts = record_text(list(result.attempts), scrub=True)
    size = len(attempts) + sum(len(part) for part in (output, snapshot, error) if part is not None)
    return Records(output, snapshot, attempts, error, size)


def record_text(value: Any, *, scrub: bool = False) -> Encoded:
    """A record of what happened as the store writes it: made storable (`limits.storable`),
    registered secrets masked (`redact_secrets`), and with `scrub` redacted (`redact`: URL
    credentials and key shapes too). Its JSON text tells whether any of that is needed, so that
    a clean record, nearly all of them, is encoded once and never walked."""
    text = fine_text(value)
    if text is None:
        value = storable(value)  # bounded in depth from here on: the walks below cannot recurse too far
    elif holds_no_secret(text) and (not scrub or redacts_nothing(text)):
        return Encoded(text)
    value = redact_secrets(value)
    return encoded(redact(value) if scrub else value)


def cache_put(run_id: str, node_run_id: str, result: NodeResult) -> list[Write]:
    entry = result.cache_entry
    if entry is None or result.phase != Phase.COMPLETED:
        return []
    return [CachePut(run_id, entry.key, entry.provider, entry.model, entry.response, node_run_id)]


def finish_write(
    run_id: str,
    node_run_id: str,
    owner: str,
    status: NodeStatus,
    result: NodeResult,
    read: dict[str, int],
    records: Records | None = None,
    node_id: str | None = None,
) -> Finish:
    """The write of `result`, with its `records` as encoded already when given."""
    stored: tuple[Any, Any, Any, Any] = (result.output, result.snapshot, result.attempts, result.error)
    if records is not None:
        stored = (records.output, records.snapshot, records.attempts, records.error)
    return Finish(
        run_id,
        node_run_id,
        owner,
        status,
        *stored,
        result.tokens_input,
        result.tokens_output,
        result.cost_usd,
        read,
        node_id,
    )


def announce(events: EventBus, run_id: str, node_id: str, node_run_id: str, result: NodeResult) -> None:
    """Tell the listeners how a node ended, once its result is committed."""
    if not events.listened:
        return
    if result.phase == Phase.COMPLETED:
        events.emit(
            NodeCompleted(
                run_id,
                node_id,
                node_run_id=node_run_id,
                output=result.output,
                tokens_input=result.tokens_input,
                tokens_output=result.tokens_output,
                cost_usd=result.cost_usd,
            )
        )
    elif result.phase == Phase.WAITING:
        snapshot = result.snapshot  # masked only as it is encoded (`encode_records`): mask what is sent
        review_prompt = redact_secrets(snapshot.get("review_prompt"))
        events.emit(NodeWaiting(run_id, node_id, review_prompt=review_prompt, due_at=snapshot.get("due_at")))
    else:
        events.emit(NodeFailed(run_id, node_id, error=result.error))


@dataclass(frozen=True, slots=True)
class Verdict:
    """How the run ends: its status, and its output, error (with the failed node) or wake time."""

    status: RunStatus
    output: Any = None
    error: dict[str, Any] | None = None
    failed: str | None = None
    wake_at: float | None = None


def run_verdict(state: RunState, failed: str | None, budget_stop: dict[str, Any] | None) -> Verdict:
    """The run's outcome as its state stands, once nothing is left to execute: `failed`, the
    first node that failed in this execution; `budget_stop`, the error of a node a budget stopped."""
    phases = state.phases()
    if failed is not None or Phase.FAILED in phases.values():
        failed = failed or next(n for n, p in phases.items() if p == Phase.FAILED)
        error = {"kind": "node_failed", "node_id": failed, "message": f"node '{failed}' failed"}
        if budget_stop is not None:
            stop = budget_stop
            error = {"kind": "budget", "node_id": failed, "message": str(stop.get("message"))}
            if stop.get("budget"):
                error["budget"] = stop["budget"]
        return Verdict(RunStatus.FAILED, error=error, failed=failed)
    if Phase.WAITING in phases.values():
        # parked WAITs: the run continues at the first one's time (a review waits for a person)
        due = [state.wait_due[n] for n, p in phases.items() if p == Phase.WAITING and n in state.wait_due]
        return Verdict(RunStatus.PAUSED, wake_at=min(due, default=None))
    undecided = [n for n, p in phases.items() if p in (Phase.PENDING, Phase.RUNNING)]
    if undecided:
        # Nothing is left to execute, yet these nodes neither ran nor were skipped: the engine lost
        # track of them. Said as a failure, never as a completed run missing part of its output.
        error = {
            "kind": "internal",
            "node_id": undecided[0],
            "message": f"the run stopped with node(s) {', '.join(map(repr, undecided))} neither run nor skipped: "
            "a bug in Plait's engine; please report it with the graph",
        }
        return Verdict(RunStatus.FAILED, error=error, failed=undecided[0])
    return Verdict(RunStatus.COMPLETED, output=state.run_output())
