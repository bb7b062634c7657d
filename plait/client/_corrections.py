"""The corrections a client makes, each as the `Corrections` call the CLI makes for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from plait.errors import PlaitError, Refusal
from plait.model.enums import DownstreamPolicy

if TYPE_CHECKING:
    from plait.client._results import RunResult
    from plait.runs.corrections import Correction, Corrections
    from plait.store import Store

Apply = Callable[["Corrections", str], "Correction"]


@dataclass(frozen=True, slots=True)
class Corrected:
    """What a correction changed (`correction`: the nodes it marked stale, queued or kept) and,
    when it left work, how executing the run then ended (`result`); `parents`: the results of
    the parent runs a child's correction reopened, innermost first."""

    correction: Correction
    result: RunResult[Any] | None = None
    parents: tuple[RunResult[Any], ...] = ()

    @property
    def stale(self) -> list[str]:
        return self.correction.stale

    @property
    def queued(self) -> list[str]:
        return self.correction.queued


def make(store: Store, run_id: str, apply: Apply) -> Correction:
    from plait.runs.corrections import Corrections

    return apply(Corrections(store), run_id)


def override(node_id: str, value: Any, policy: str, note: str | None) -> Apply:
    chosen = policy.upper()
    if chosen not in DownstreamPolicy.__members__:
        raise PlaitError(f"unknown policy '{policy}'", "use KEEP, INVALIDATE, RERUN or RERUN_ALL", kind=Refusal.INVALID)

    def apply(c: Corrections, run_id: str) -> Correction:
        from plait.runs.escalations import override as escalated_or_override

        return escalated_or_override(c, run_id, node_id, value, policy=DownstreamPolicy(chosen), note=note)

    return apply


def rerun(node_id: str, downstream: bool, fresh: bool) -> Apply:
    return lambda c, run_id: c.rerun(run_id, node_id, downstream=downstream, fresh=fresh)


def review(node_id: str, value: Any, approve: bool, note: str | None) -> Apply:
    if approve == (value is not None):
        raise PlaitError(
            "give either approve=True or a corrected value", "review(run_id, node_id, value) or approve=True",
            kind=Refusal.INVALID,
        )  # fmt: skip
    return lambda c, run_id: c.review(run_id, node_id, None if approve else value, approve=approve, note=note)


def rollback(target: str, to_version: int, cascade: bool) -> Apply:
    owner, _, field_name = target.partition(".")
    return lambda c, run_id: c.rollback(run_id, owner, field_name or None, to_version, cascade=cascade)
