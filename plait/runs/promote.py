"""Promoting a version of a graph: making it what runs by default (docs/evaluation.md, "Promotion").

A graph's promoted version is what `plait run GRAPH`, the HTTP run routes, schedules, batches
and child graphs named without a pinned version run (`GraphRepository.get_default`). It moves
only through the gate: the newest completed evaluation of the named evaluation set for that
version must have passed. A person may promote anyway with `force` and a note saying why; the
promotion is recorded as forced, with the evaluation it overrode, if any. A gate set that does
not exist is refused even then: a mistyped name must not pass for a decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plait.errors import PlaitError, Refusal
from plait.evaluation.gate import Status
from plait.model.enums import SourceType
from plait.runs.eval_build import set_ref
from plait.store import Store, StoredGraph, StoreError
from plait.store.evaluations import EvalSet, Evaluation, Promotion

FORCE_HINT = "pass --force --note TEXT to promote anyway"
"""The way past the gate, said once (the HTTP API and the client reword it)."""
MAX_NOTE = 2000


class PromotionError(PlaitError):
    """A promotion asked for wrongly (no gate, a force without a note, an unknown version or set)."""

    kind = Refusal.INVALID
    code = "promotion_invalid"


class GateRefused(PromotionError):
    """The gate did not let the version through: no passing verdict of the set for it."""

    kind = Refusal.CONFLICT
    code = "gate_refused"


@dataclass(frozen=True, slots=True)
class PromotionShown:
    """A promotion with what it went through: the set its evaluation scored on (`gate`, as
    NAME@REV) and that evaluation's verdict (for a forced one, the verdict it overrode)."""

    promotion: Promotion
    gate: str | None
    verdict: str | None

    def as_json(self) -> dict[str, Any]:
        p = self.promotion
        return {
            "version": p.version, "previous_version": p.previous_version, "evaluation_id": p.evaluation_id,
            "gate": self.gate, "verdict": self.verdict, "forced": p.forced, "note": p.note,
            "promoted_by": p.promoted_by, "promoted_at": p.promoted_at,
        }  # fmt: skip

    def describe(self) -> str:
        """One line: how the version got there."""
        p = self.promotion
        through = f"gate {self.gate} (evaluation {p.evaluation_id[:8]}: {self.verdict})" if p.evaluation_id else ""
        if p.forced:
            return f"forced{f' over {through}' if through else ''}: {p.note}"
        return f"through {through}" if through else "without a gate"


@dataclass(frozen=True, slots=True)
class Promotions:
    """A graph's promoted version (None: its latest runs) and every promotion, newest first."""

    graph_id: str
    slug: str
    latest_version: int
    promoted_version: int | None
    history: list[PromotionShown]

    def as_json(self) -> dict[str, Any]:
        return {"promoted_version": self.promoted_version, "promotions": [p.as_json() for p in self.history]}


def promote(
    store: Store, graph_ref: str, version: int, *, gate: str | None, force: bool, note: str | None, by: str
) -> Promotion:
    """Make `version` of the graph its promoted version, through the gate `gate` (an evaluation
    set, NAME or NAME@REV: the newest completed evaluation of it for this version must say
    pass), or with `force` and a `note` past it. GateRefused when the gate says no; PromotionError
    for a request that cannot be made."""
    note = (note or "").strip() or None
    if note is not None and len(note) > MAX_NOTE:
        raise PromotionError(f"the note is {len(note)} characters long", f"keep it under {MAX_NOTE}")
    if force and note is None:
        raise PromotionError("a forced promotion needs a note saying why", "pass --note TEXT with --force")
    if gate is None and not force:
        raise PromotionError(
            "a version is promoted through the gate: name the evaluation set whose verdict lets it through",
            f"pass --gate NAME (an evaluation set of the graph), or {FORCE_HINT}",
        )
    graph = _graph(store, graph_ref, version)
    evaluation: Evaluation | None = None
    if gate is not None:
        eval_set = _set(store, graph, gate)
        evaluation = _newest_verdict(store, eval_set, version)
        status = _status(evaluation)
        if status != Status.PASS and not force:
            raise _refusal(graph, eval_set, version, evaluation, status)
    passed = evaluation is not None and _status(evaluation) == Status.PASS
    return store.evaluations.promote(
        graph.graph_id, version, by=by, evaluation_id=evaluation.id if evaluation is not None else None,
        forced=not passed, note=note,
    )  # fmt: skip


def promotions(store: Store, graph_ref: str) -> Promotions:
    """The graph's promoted version and its promotion history (a deleted graph's too)."""
    try:
        graph = store.graphs.get(graph_ref)
    except StoreError as exc:
        raise PromotionError(str(exc), "`plait graphs list` lists the stored graphs", kind=Refusal.NOT_FOUND) from None
    history = [shown(store, p) for p in store.evaluations.promotions(graph.graph_id)]
    promoted = history[0].promotion.version if history else None
    return Promotions(graph.graph_id, graph.slug, graph.latest_version, promoted, history)


def shown(store: Store, promotion: Promotion) -> PromotionShown:
    """`promotion` with the set and verdict of its evaluation."""
    if promotion.evaluation_id is None:
        return PromotionShown(promotion, None, None)
    try:
        evaluation = store.evaluations.evaluation(promotion.evaluation_id)
        eval_set = store.evaluations.set_by_id(evaluation.set_id)
    except StoreError:
        return PromotionShown(promotion, None, None)
    return PromotionShown(promotion, eval_set.ref, _status(evaluation))


def _graph(store: Store, graph_ref: str, version: int) -> StoredGraph:
    try:
        graph = store.graphs.get(graph_ref)
    except StoreError as exc:
        raise PromotionError(str(exc), "`plait graphs list` lists the stored graphs", kind=Refusal.NOT_FOUND) from None
    if graph.deleted_at is not None:
        raise PromotionError(
            f"graph '{graph_ref}' was deleted: no new run starts, so no version of it can be promoted",
            "store it again (`plait graphs import FILE`), evaluate that version, and promote it",
            kind=Refusal.NOT_FOUND,
        )
    if graph.source_type == SourceType.SYSTEM:
        raise PromotionError(
            f"graph '{graph.slug}' ships with Plait: the version this Plait stores of it is the one that runs",
            f"fork it (`plait graphs fork {graph.slug}`) and promote versions of the fork",
            kind=Refusal.FORBIDDEN,
        )
    if not 1 <= version <= graph.latest_version:
        raise PromotionError(
            f"graph '{graph.slug}' has no version {version}: its versions are 1 to {graph.latest_version}",
            f"`plait graphs versions {graph.slug}` lists them",
            kind=Refusal.NOT_FOUND,
        )
    return graph


def _set(store: Store, graph: StoredGraph, gate: str) -> EvalSet:
    try:
        name, revision = set_ref(gate.strip())
    except PlaitError as exc:  # NAME@REV with no revision number
        raise PromotionError(exc.message, exc.hint) from None
    try:
        return store.evaluations.get_set(graph.graph_id, name, revision)
    except StoreError:
        raise PromotionError(
            f"graph '{graph.slug}' has no evaluation set '{gate}' to gate the promotion with",
            f"`plait eval show {graph.slug}` lists its sets; `plait eval build {graph.slug} --name NAME` makes one",
            kind=Refusal.NOT_FOUND,
        ) from None


def _newest_verdict(store: Store, eval_set: EvalSet, version: int) -> Evaluation | None:
    """The evaluation of `version` on the set that completed last, or None."""
    done = [
        e
        for e in store.evaluations.evaluations(set_id=eval_set.id)
        if e.candidate_version == version and e.status == "completed"
    ]
    return max(done, key=lambda e: (e.completed_at or 0.0, e.created_at), default=None)


def _status(evaluation: Evaluation | None) -> str | None:
    verdict = evaluation.verdict if evaluation is not None else None
    status = verdict.get("status") if isinstance(verdict, dict) else None
    return str(status) if status is not None else None


def _refusal(
    graph: StoredGraph, eval_set: EvalSet, version: int, evaluation: Evaluation | None, status: str | None
) -> GateRefused:
    run = f"`plait eval run {graph.slug} --set {eval_set.ref} --version {version}`"
    where = f"version {version} of '{graph.slug}' on {eval_set.ref}"
    if evaluation is None:
        return GateRefused(
            f"the gate refused {where}: no evaluation of it has completed",
            f"evaluate it first: {run}; or {FORCE_HINT}",
        )
    said = status or "no verdict"
    lines = evaluation.verdict.get("lines") if isinstance(evaluation.verdict, dict) else None
    details = [str(line) for line in lines] if isinstance(lines, list) else []
    return GateRefused(
        f"the gate refused {where}: its newest evaluation ({evaluation.id}) says {said}, not pass",
        f"the details give its verdict; evaluate again once that can change (a fixed version, a larger set: "
        f"{run}), or {FORCE_HINT}",
        details,
    )
