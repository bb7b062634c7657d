"""What the client hands back: a run's outcome as a value, and the refusals it raises itself.

A run that failed is not an exception: `RunResult` says how it ended, and `raise_for_status`
turns a failure into one when the caller wants that. Misuse (an unknown run, a value that
breaks a schema, a closed client) raises a `PlaitError`, as on every other surface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from plait.client._wording import for_python
from plait.errors import PlaitError, Refusal
from plait.model.enums import RunStatus

if TYPE_CHECKING:
    from plait.engine.outcome import RunOutcome
    from plait.store import RunRecord, Store

T = TypeVar("T")


class ClientClosed(PlaitError):
    """The client was closed; open a new one."""

    code = "client_closed"


class RunFailed(PlaitError):
    """`RunResult.raise_for_status` on a run that failed or was cancelled."""

    code = "run_failed"


class OutputMismatch(PlaitError):
    """The run completed, but its output does not fit the `output_type` it was asked for."""

    code = "output_mismatch"
    kind = Refusal.INVALID


@dataclass(frozen=True, slots=True)
class NodeFailure:
    """Why a run failed: the failing node's own error, and what to do about it."""

    node_id: str
    node_run_id: str
    kind: str
    """What failed (`schema`, `timeout`, `budget`, `expression`, `internal`...)."""
    message: str
    details: tuple[str, ...]
    hint: str


@dataclass(frozen=True, slots=True)
class PendingReview:
    """A node waiting for a person: answer it with `client.review(run_id, node_id, ...)`."""

    node_id: str
    node_run_id: str
    prompt: str | None
    value: Any
    """The value under review (None for a failure handed to a person: give its output)."""


@dataclass(frozen=True, slots=True)
class RunResult(Generic[T]):
    """How a run ended (or where it stopped): `completed` with its output, `failed` with the
    failing node's error, `paused` with the reviews waiting for a person, or `cancelled`.
    With an `output_type`, `output` is the run's output validated into that type."""

    run_id: str
    status: RunStatus
    output: T | None = None
    error: dict[str, Any] | None = None
    """The run's own error (`kind`, `node_id`, `message`), as stored."""
    failure: NodeFailure | None = None
    reviews: tuple[PendingReview, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.status == RunStatus.COMPLETED

    def raise_for_status(self) -> RunResult[T]:
        """This result when the run did not fail; else raise `RunFailed` with the node's reason."""
        if self.status not in (RunStatus.FAILED, RunStatus.CANCELLED):
            return self
        if self.failure is None:
            message = str((self.error or {}).get("message") or f"run {self.run_id} {self.status}")
            raise RunFailed(f"run {self.run_id} {self.status}: {message}")
        cause = self.failure
        raise RunFailed(
            f"run {self.run_id} failed at node '{cause.node_id}' ({cause.kind}): {cause.message}",
            cause.hint,
            list(cause.details),
        )


def result_of(store: Store, record: RunRecord, output_type: Any = None) -> RunResult[Any]:
    """The result of the run as `record` has it: the failing node's error, or the waiting reviews,
    read from its node runs when it stopped short of completing."""
    from plait.runs.stopped import node_failure, waiting_reviews

    status = RunStatus(record.status)
    if status not in (RunStatus.FAILED, RunStatus.PAUSED):
        return RunResult(record.id, status, _typed(record.id, status, record.output, output_type), record.error)
    nodes = store.runs.node_runs(record.id)
    if status == RunStatus.PAUSED:
        reviews = tuple(_review(r) for r in waiting_reviews(record.id, nodes))
        return RunResult(record.id, status, None, record.error, None, reviews)
    cause = node_failure(record.id, record.error, nodes)
    return RunResult(record.id, status, None, record.error, None if cause is None else _failure(cause))


def result_from(outcome: RunOutcome, output_type: Any = None) -> RunResult[Any]:
    """The result of a run that completed or was cancelled, as the engine reported it: nothing
    more to read (a failed or waiting run needs its node runs: `result_of`)."""
    status = RunStatus(outcome.status)
    return RunResult(outcome.run_id, status, _typed(outcome.run_id, status, outcome.output, output_type), outcome.error)


def _typed(run_id: str, status: RunStatus, output: Any, output_type: Any) -> Any:
    if output_type is None or status != RunStatus.COMPLETED:
        return output
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(output_type).validate_python(output)
    except ValidationError as exc:
        details = [f"{'.'.join(map(str, e['loc'])) or 'output'}: {e['msg']}" for e in exc.errors()]
        raise OutputMismatch(
            f"run {run_id} completed, but its output is not a {getattr(output_type, '__name__', output_type)}",
            f"read it untyped with client.get_run({run_id!r}), or fix the output type",
            details,
        ) from None


def _failure(cause: dict[str, Any]) -> NodeFailure:
    return NodeFailure(
        node_id=str(cause["node_id"]),
        node_run_id=str(cause["node_run_id"]),
        kind=str(cause.get("kind") or "error"),
        message=str(cause.get("message", "")),
        details=tuple(str(d) for d in cause.get("details") or ()),
        hint=for_python(str(cause["hint"])),
    )


def _review(review: dict[str, Any]) -> PendingReview:
    return PendingReview(review["node_id"], review["node_run_id"], review["review_prompt"], review["value"])
