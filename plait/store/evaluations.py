"""Evaluation sets, their cases, evaluations with their results, and graph promotions.

Nothing here changes a set or a case once written: a refreshed set is the next revision under
its name. Results are written once per (evaluation, case, side, repetition): writing one again
keeps the first, so an evaluation resumed after a crash never scores a case twice.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from plait.store.db import new_id, writer
from plait.store.errors import NotFoundError, StoreError
from plait.store.evaluation_models import EVAL_CASE, EVAL_RESULT, EVAL_SET, EVALUATION, GRAPH_PROMOTION
from plait.store.evaluation_runs import PreparedRun, write_prepared_run
from plait.store.models import FIELD_VERSION, GRAPH_RUN


@dataclass(frozen=True, slots=True)
class NewCase:
    """A case to store (see `EvalCase`)."""

    level: str
    label: str
    source_run_id: str
    graph_version: int
    ledger_version: int
    input: Any
    original: Any
    expected: Any
    node_run_id: str | None = None
    node_id: str | None = None
    schemas: list[dict[str, Any]] = field(default_factory=list)
    critical: bool = False
    judged_by: str | None = None
    judged_at: float | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class EvalCase(NewCase):
    """One case of a set: at node level, a node's recorded input and the value a person gave or
    approved for it; at run level, a run's input and output."""

    id: str = ""
    set_id: str = ""
    position: int = 0


@dataclass(frozen=True, slots=True)
class EvalSet:
    id: str
    graph_id: str
    name: str
    revision: int
    built_from: dict[str, Any]
    cases: int
    created_by: str
    created_at: float

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.revision}"


@dataclass(frozen=True, slots=True)
class Evaluation:
    id: str
    set_id: str
    graph_id: str
    candidate_version: int
    baseline_version: int | None
    repetitions: int
    rules: dict[str, Any]
    status: str
    verdict: dict[str, Any] | None
    error: dict[str, Any] | None
    created_by: str
    created_at: float
    completed_at: float | None


@dataclass(frozen=True, slots=True)
class EvalResult:
    evaluation_id: str
    case_id: str
    side: str
    repetition: int
    run_id: str | None
    output: Any
    score: dict[str, Any] | None
    passed: bool | None
    incomparable: str | None


@dataclass(frozen=True, slots=True)
class Promotion:
    id: str
    graph_id: str
    version: int
    previous_version: int | None
    evaluation_id: str | None
    forced: bool
    note: str | None
    promoted_by: str
    promoted_at: float


class EvaluationRepository:
    """Sets, cases, evaluations, results and promotions; each write is one transaction."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._writer = writer(engine)

    # ------------------------------------------------------------------ sets

    def create_set(
        self, graph_id: str, name: str, cases: Sequence[NewCase], *, built_from: dict[str, Any], by: str
    ) -> EvalSet:
        """A new revision of the set `name` of the graph (1 for a new name), with its cases."""
        set_id, now = new_id(), time.time()
        try:
            with self._writer.begin() as conn:
                newest = conn.execute(
                    select(func.max(EVAL_SET.c.revision)).where(
                        EVAL_SET.c.graph_id == graph_id, EVAL_SET.c.name == name
                    )
                ).scalar()
                conn.execute(insert(EVAL_SET).values(
                    id=set_id, graph_id=graph_id, name=name, revision=(newest or 0) + 1, built_from_json=built_from,
                    cases=len(cases), created_by=by, created_at=now))  # fmt: skip
                if cases:
                    conn.execute(insert(EVAL_CASE), [_case_row(set_id, i, case) for i, case in enumerate(cases, 1)])
        except IntegrityError as exc:
            raise StoreError(
                f"evaluation set '{name}' was written by another process at the same time",
                "build it again: it becomes the next revision",
            ) from exc
        return self.set_by_id(set_id)

    def set_by_id(self, set_id: str) -> EvalSet:
        with self._engine.connect() as conn:
            row = conn.execute(select(EVAL_SET).where(EVAL_SET.c.id == set_id)).first()
        if row is None:
            raise NotFoundError(f"no evaluation set '{set_id}'", "`plait eval show GRAPH` lists a graph's sets")
        return _set(row)

    def get_set(self, graph_id: str, name: str, revision: int | None = None) -> EvalSet:
        """The set `name` of the graph: its newest revision, or `revision`."""
        query = select(EVAL_SET).where(EVAL_SET.c.graph_id == graph_id, EVAL_SET.c.name == name)
        if revision is not None:
            query = query.where(EVAL_SET.c.revision == revision)
        with self._engine.connect() as conn:
            row = conn.execute(query.order_by(EVAL_SET.c.revision.desc()).limit(1)).first()
        if row is None:
            which = f"'{name}'" if revision is None else f"'{name}@{revision}'"
            raise NotFoundError(f"no evaluation set {which} for this graph", "`plait eval build` makes one")
        return _set(row)

    def sets(self, graph_id: str | None = None) -> list[EvalSet]:
        """Every set (of one graph), newest first."""
        query = select(EVAL_SET)
        if graph_id is not None:
            query = query.where(EVAL_SET.c.graph_id == graph_id)
        with self._engine.connect() as conn:
            rows = conn.execute(query.order_by(EVAL_SET.c.created_at.desc(), EVAL_SET.c.revision.desc())).all()
        return [_set(row) for row in rows]

    def cases(self, set_id: str) -> list[EvalCase]:
        """The set's cases, in order."""
        query = select(EVAL_CASE).where(EVAL_CASE.c.set_id == set_id).order_by(EVAL_CASE.c.position)
        with self._engine.connect() as conn:
            return [_case(row) for row in conn.execute(query).all()]

    def judged_runs(self, graph_id: str, *, since: float | None = None) -> list[str]:
        """The runs of the graph whose ledger holds a person's word (an override, a review, a
        rollback; one at or after `since`), oldest first: a set's cases come from these. Child runs
        and the runs evaluations made are left out."""
        query = (
            select(GRAPH_RUN.c.id)
            .where(
                GRAPH_RUN.c.prompt_graph_def_id == graph_id,
                GRAPH_RUN.c.workflow_run_id.is_(None),
                GRAPH_RUN.c.purpose.is_(None) | (GRAPH_RUN.c.purpose != "evaluation"),
                select(FIELD_VERSION.c.version)
                .where(
                    FIELD_VERSION.c.prompt_graph_run_id == GRAPH_RUN.c.id,
                    FIELD_VERSION.c.kind.in_(("override", "review", "rollback")),
                    FIELD_VERSION.c.at >= (since if since is not None else 0.0),
                )
                .exists(),
            )
            .order_by(GRAPH_RUN.c.created_at, GRAPH_RUN.c.id)
        )
        with self._engine.connect() as conn:
            return [str(row.id) for row in conn.execute(query).all()]

    # ------------------------------------------------------------------ evaluations

    def create_evaluation(
        self,
        set_id: str,
        graph_id: str,
        candidate_version: int,
        *,
        baseline_version: int | None,
        repetitions: int,
        rules: dict[str, Any],
        by: str,
    ) -> Evaluation:
        evaluation_id = new_id()
        with self._writer.begin() as conn:
            conn.execute(insert(EVALUATION).values(
                id=evaluation_id, set_id=set_id, graph_id=graph_id, candidate_version=candidate_version,
                baseline_version=baseline_version, repetitions=repetitions, rules_json=rules, status="pending",
                created_by=by, created_at=time.time()))  # fmt: skip
        return self.evaluation(evaluation_id)

    def evaluation(self, evaluation_id: str) -> Evaluation:
        with self._engine.connect() as conn:
            row = conn.execute(select(EVALUATION).where(EVALUATION.c.id == evaluation_id)).first()
        if row is None:
            raise NotFoundError(
                f"no evaluation '{evaluation_id}'", "`plait eval show GRAPH` lists a graph's evaluations"
            )
        return _evaluation(row)

    def evaluations(self, *, graph_id: str | None = None, set_id: str | None = None) -> list[Evaluation]:
        """Evaluations, newest first."""
        query = select(EVALUATION)
        if graph_id is not None:
            query = query.where(EVALUATION.c.graph_id == graph_id)
        if set_id is not None:
            query = query.where(EVALUATION.c.set_id == set_id)
        with self._engine.connect() as conn:
            return [_evaluation(row) for row in conn.execute(query.order_by(EVALUATION.c.created_at.desc())).all()]

    def finish(
        self,
        evaluation_id: str,
        status: str,
        *,
        verdict: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> None:
        """Record how an evaluation ended (or that it runs: `status` "running", nothing else)."""
        values: dict[str, Any] = {"status": status}
        if status != "running":
            values |= {"verdict_json": verdict, "error_json": error, "completed_at": time.time()}
        with self._writer.begin() as conn:
            conn.execute(update(EVALUATION).where(EVALUATION.c.id == evaluation_id).values(values))

    def put_result(self, result: EvalResult) -> bool:
        """Keep a case's result on one side and repetition; False (and the first one kept) when
        it was written already."""
        row = {
            "evaluation_id": result.evaluation_id, "case_id": result.case_id, "side": result.side,
            "repetition": result.repetition, "run_id": result.run_id, "output_json": result.output,
            "score_json": result.score, "passed": result.passed, "incomparable": result.incomparable,
            "created_at": time.time(),
        }  # fmt: skip
        try:
            with self._writer.begin() as conn:
                conn.execute(insert(EVAL_RESULT).values(row))
        except IntegrityError:
            return False
        return True

    def create_run(self, prepared: PreparedRun) -> bool:
        """Create the run an evaluation executes a case with, its nodes before the evaluated one
        already there (`plait.store.evaluation_runs`; for evaluations only); False, and nothing
        written, when it exists already (a resumed evaluation drives it on)."""
        try:
            with self._writer.begin() as conn:
                return write_prepared_run(conn, prepared)
        except IntegrityError:  # created by another process at the same moment
            return False

    def results(self, evaluation_id: str) -> list[EvalResult]:
        query = (
            select(EVAL_RESULT)
            .where(EVAL_RESULT.c.evaluation_id == evaluation_id)
            .order_by(EVAL_RESULT.c.case_id, EVAL_RESULT.c.side, EVAL_RESULT.c.repetition)
        )
        with self._engine.connect() as conn:
            return [_result(row) for row in conn.execute(query).all()]

    # ------------------------------------------------------------------ promotions

    def promote(
        self,
        graph_id: str,
        version: int,
        *,
        by: str,
        evaluation_id: str | None = None,
        forced: bool = False,
        note: str | None = None,
    ) -> Promotion:
        """Make `version` the graph's promoted version, recording the gate that allowed it (or
        that it was forced, and why)."""
        promotion_id = new_id()
        with self._writer.begin() as conn:
            newest = conn.execute(_newest_promotion(graph_id).with_only_columns(
                GRAPH_PROMOTION.c.version, GRAPH_PROMOTION.c.promoted_at)).first()  # fmt: skip
            previous, after = (newest.version, newest.promoted_at) if newest is not None else (None, 0.0)
            conn.execute(insert(GRAPH_PROMOTION).values(
                id=promotion_id, graph_id=graph_id, version=version, previous_version=previous,
                evaluation_id=evaluation_id, forced=forced, note=note, promoted_by=by,
                # later than the one it replaces, even on a coarse clock: the newest row is the one in effect
                promoted_at=max(time.time(), after + 1e-6)))  # fmt: skip
        return next(p for p in self.promotions(graph_id) if p.id == promotion_id)

    def promoted_version(self, graph_id: str) -> int | None:
        """The version runs of the graph use by default, or None when none was promoted."""
        with self._engine.connect() as conn:
            found = conn.execute(_newest_promotion(graph_id).with_only_columns(GRAPH_PROMOTION.c.version)).scalar()
        return int(found) if found is not None else None

    def promotions(self, graph_id: str) -> list[Promotion]:
        """Every promotion of the graph, newest first."""
        query = (
            select(GRAPH_PROMOTION)
            .where(GRAPH_PROMOTION.c.graph_id == graph_id)
            .order_by(GRAPH_PROMOTION.c.promoted_at.desc(), GRAPH_PROMOTION.c.id)
        )
        with self._engine.connect() as conn:
            return [_promotion(row) for row in conn.execute(query).all()]


def _newest_promotion(graph_id: str) -> Any:
    return (
        select(GRAPH_PROMOTION)
        .where(GRAPH_PROMOTION.c.graph_id == graph_id)
        .order_by(GRAPH_PROMOTION.c.promoted_at.desc())
        .limit(1)
    )


def _case_row(set_id: str, position: int, case: NewCase) -> dict[str, Any]:
    return {
        "id": new_id(), "set_id": set_id, "position": position, "level": case.level, "label": case.label,
        "critical": case.critical, "source_run_id": case.source_run_id, "node_run_id": case.node_run_id,
        "node_id": case.node_id, "graph_version": case.graph_version, "ledger_version": case.ledger_version,
        "input_json": case.input, "original_json": case.original, "expected_json": case.expected,
        "schemas_json": case.schemas, "judged_by": case.judged_by, "judged_at": case.judged_at, "note": case.note,
    }  # fmt: skip


def _set(row: Any) -> EvalSet:
    return EvalSet(row.id, row.graph_id, row.name, row.revision, dict(row.built_from_json or {}), row.cases,
                   row.created_by, row.created_at)  # fmt: skip


def _case(row: Any) -> EvalCase:
    return EvalCase(
        level=row.level, label=row.label, source_run_id=row.source_run_id, graph_version=row.graph_version,
        ledger_version=row.ledger_version, input=row.input_json, original=row.original_json,
        expected=row.expected_json, node_run_id=row.node_run_id, node_id=row.node_id,
        schemas=list(row.schemas_json or []), critical=bool(row.critical), judged_by=row.judged_by,
        judged_at=row.judged_at, note=row.note, id=row.id, set_id=row.set_id, position=row.position,
    )  # fmt: skip


def _evaluation(row: Any) -> Evaluation:
    return Evaluation(
        row.id, row.set_id, row.graph_id, row.candidate_version, row.baseline_version, row.repetitions,
        dict(row.rules_json or {}), row.status, row.verdict_json, row.error_json, row.created_by, row.created_at,
        row.completed_at,
    )  # fmt: skip


def _result(row: Any) -> EvalResult:
    return EvalResult(row.evaluation_id, row.case_id, row.side, row.repetition, row.run_id, row.output_json,
                      row.score_json, None if row.passed is None else bool(row.passed), row.incomparable)  # fmt: skip


def _promotion(row: Any) -> Promotion:
    return Promotion(row.id, row.graph_id, row.version, row.previous_version, row.evaluation_id, bool(row.forced),
                     row.note, row.promoted_by, row.promoted_at)  # fmt: skip
