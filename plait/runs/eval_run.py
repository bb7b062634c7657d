"""Running an evaluation (docs/evaluation.md, "Running an evaluation"): a candidate version of a
graph scored on a set of cases people judged, against a baseline, and the gate's verdict.

`start_evaluation` records what is evaluated (the set, the candidate and baseline versions, the
repetitions, the gate's rules); `run_evaluation` drives it to its verdict with ordinary runs
(`purpose` "evaluation"), each driven by the caller's `drive` (a command's run session, a
server's executor), and can be called again on an evaluation that stopped: what is recorded is
kept, and only what is missing runs. `evaluation_report` reads one back, finished or not;
`estimate_evaluation` says what one would call and cost without calling a model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from plait.engine.run_input import stored_graph
from plait.errors import PlaitError, Refusal
from plait.evaluation import GateRules, Similarity, decide
from plait.llm.provider import Provider
from plait.runs._eval_cases import Interrupted as Interrupted  # re-exported: an evaluation stopped mid-way
from plait.runs._eval_cost import Estimate, estimate
from plait.runs._eval_driver import (
    BASELINE,
    CANDIDATE,
    Drive,
    Driver,
    Emit,
    case_event,
    gate_id,
    pair_of,
    rules_of,
)
from plait.runs.eval_build import set_ref as parse_set_ref
from plait.store import Store, StoredGraph
from plait.store.errors import StoreError
from plait.store.evaluations import EvalCase, EvalResult, EvalSet, Evaluation

RECORDED = "recorded"
"""The baseline by default: each case's recorded output (it costs nothing)."""
MAX_REPETITIONS = 20
UNFINISHED = ("pending", "running")


class EvaluationRunError(PlaitError):
    """An evaluation cannot be started as asked (an unknown set or version, a bad setting)."""

    kind = Refusal.INVALID
    code = "evaluation_refused"


@dataclass(frozen=True, slots=True)
class Target:
    """What an evaluation evaluates: the candidate version, the set, the baseline (None: the
    recorded outputs), the repetitions of each candidate run and the gate's rules."""

    candidate: StoredGraph
    eval_set: EvalSet
    baseline: StoredGraph | None
    repetitions: int
    rules: GateRules
    time_split: bool

    def rules_json(self) -> dict[str, Any]:
        return {**asdict(self.rules), "time_split": self.time_split}


def resolve(
    store: Store,
    graph_ref: str,
    set_ref: str,
    *,
    candidate_version: int | None = None,
    baseline: str | int = RECORDED,
    repetitions: int = 1,
    rules: GateRules | None = None,
    time_split: bool = False,
) -> Target:
    """What `start_evaluation` would evaluate, each part checked; nothing is written."""
    graph = stored_graph(store, graph_ref)
    try:
        name, revision = parse_set_ref(set_ref.strip())
    except PlaitError as exc:  # NAME@ with no revision number
        raise EvaluationRunError(exc.message, exc.hint) from None
    eval_set = store.evaluations.get_set(graph.graph_id, name, revision)
    if not 1 <= repetitions <= MAX_REPETITIONS:
        raise EvaluationRunError(
            f"--repeat is {repetitions}", f"repeat each candidate run 1 to {MAX_REPETITIONS} times"
        )
    candidate = _version(store, graph, candidate_version or graph.latest_version, "candidate")
    base = None if baseline == RECORDED else _version(store, graph, _number(baseline), "baseline")
    return Target(candidate, eval_set, base, repetitions, rules or GateRules(), time_split)


def _number(baseline: str | int) -> int:
    if isinstance(baseline, int) or str(baseline).isdigit():
        return int(baseline)
    raise EvaluationRunError(f"baseline '{baseline}'", f"give '{RECORDED}' or a version number")


def _version(store: Store, graph: StoredGraph, version: int, what: str) -> StoredGraph:
    try:
        return store.graphs.get(graph.graph_id, version)
    except StoreError:
        raise EvaluationRunError(
            f"graph '{graph.slug}' has no version {version} to use as the {what}",
            f"its versions are 1 to {graph.latest_version} (`plait graphs versions {graph.slug}`)",
            kind=Refusal.NOT_FOUND,
            code="not_found",
        ) from None


def start_evaluation(
    store: Store,
    graph_ref: str,
    set_ref: str,
    *,
    candidate_version: int | None = None,
    baseline: str | int = RECORDED,
    repetitions: int = 1,
    rules: GateRules | None = None,
    by: str,
    time_split: bool = False,
    resume: bool = True,
) -> Evaluation:
    """Record an evaluation of the graph's candidate version (default: its newest) on the set
    `NAME[@REV]`, against the recorded outputs or version `baseline`; `run_evaluation` drives it.
    With `resume`, an unfinished evaluation of exactly the same is returned instead, to be driven on."""
    target = resolve(store, graph_ref, set_ref, candidate_version=candidate_version, baseline=baseline,
                     repetitions=repetitions, rules=rules, time_split=time_split)  # fmt: skip
    base = target.baseline.version if target.baseline is not None else None
    if resume:
        for found in store.evaluations.evaluations(set_id=target.eval_set.id):
            same = (found.candidate_version, found.baseline_version, found.repetitions, found.rules)
            if found.status in UNFINISHED and same == (
                target.candidate.version,
                base,
                repetitions,
                target.rules_json(),
            ):
                return found
    return store.evaluations.create_evaluation(
        target.eval_set.id, target.candidate.graph_id, target.candidate.version, baseline_version=base,
        repetitions=repetitions, rules=target.rules_json(), by=by,
    )  # fmt: skip


CONCURRENCY = 4
"""Cases whose runs an evaluation drives at once, by default: their model calls still go through
the provider pool's own limits."""
MAX_CONCURRENCY = 256


async def run_evaluation(
    store: Store,
    evaluation_id: str,
    drive: Drive,
    *,
    similarity: Similarity | None = None,
    llm: dict[str, Any] | None = None,
    concurrency: int = CONCURRENCY,
    on_event: Emit | None = None,
) -> EvaluationReport:
    """Drive the evaluation to its verdict (see the module); its report. A run stopped before it
    ended raises `Interrupted` and leaves the evaluation to be driven again; anything else that
    stops it is recorded as its error (status `failed`) and raised."""
    evaluation = store.evaluations.evaluation(evaluation_id)
    if evaluation.status in UNFINISHED:
        driver = Driver(store, evaluation, drive, similarity=similarity, llm=llm, concurrency=concurrency,
                        on_event=on_event)  # fmt: skip
        try:
            await driver.run()
        except Interrupted:
            raise
        except PlaitError as exc:
            error = {"code": exc.code, "message": exc.message, "hint": exc.hint, "details": exc.details}
            store.evaluations.finish(evaluation_id, "failed", error=error)
            raise
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
            store.evaluations.finish(evaluation_id, "failed", error={"code": "internal", "message": message})
            raise
    return evaluation_report(store, evaluation_id)


async def estimate_evaluation(store: Store, target: Target, provider: Provider | None) -> Estimate:
    """What evaluating `target` would call and cost on `provider`'s prices; no model is called,
    nothing is stored."""
    baseline = target.baseline
    return await estimate(store, target.eval_set.id, target.candidate, baseline, target.repetitions, provider)


def default_similarity() -> Similarity | None:
    """Meaning by the knowledge bases' sentence embedder, loaded when a text is first compared
    (None when it is not installed: free texts are then compared by their words)."""
    from plait.evaluation import embedding_similarity
    from plait.knowledge import embed

    if not embed.available(embed.DEFAULT_EMBEDDER):
        return None
    loaded: list[Callable[[str, str], float]] = []

    def similarity(a: str, b: str) -> float:
        if not loaded:
            found = embedding_similarity()
            loaded.append(found if found is not None else (lambda x, y: 1.0 if x == y else 0.0))
        return loaded[0](a, b)

    return similarity


# -- reading an evaluation back ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CaseReport:
    """One case of an evaluation: how it came out (None while it is being scored), its results."""

    case: EvalCase
    outcome: dict[str, Any] | None
    baseline: EvalResult | None
    candidate: list[EvalResult] = field(default_factory=list)

    @property
    def gate_id(self) -> str:
        return gate_id(self.case)

    def as_json(self) -> dict[str, Any]:
        return {
            "position": self.case.position, "case_id": self.case.id, "gate_id": self.gate_id,
            "level": self.case.level, "label": self.case.label, "critical": self.case.critical,
            "node_id": self.case.node_id, "source_run_id": self.case.source_run_id,
            "outcome": (self.outcome or {}).get("outcome"), "reason": (self.outcome or {}).get("reason") or None,
            "baseline": _result_json(self.baseline), "candidate": [_result_json(r) for r in self.candidate],
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class EvaluationReport:
    """An evaluation as it stands: its cases and, once it ended, its verdict (`verdict["lines"]`,
    `verdict["exit_code"]`) or its error."""

    evaluation: Evaluation
    eval_set: EvalSet
    cases: list[CaseReport]

    @property
    def verdict(self) -> dict[str, Any] | None:
        return self.evaluation.verdict

    @property
    def exit_code(self) -> int | None:
        return int(self.verdict["exit_code"]) if self.verdict else None

    def events(self) -> list[tuple[int, str, dict[str, Any]]]:
        """What its stream says, numbered: each scored case by its position, in order while none
        before it is missing, then the verdict (numbered one past the last case)."""
        said: list[tuple[int, str, dict[str, Any]]] = []
        for shown in self.cases:
            if shown.outcome is None:
                break
            said.append((shown.case.position, "case", shown.outcome))
        if self.verdict is not None and len(said) == len(self.cases):
            said.append((len(self.cases) + 1, "verdict", self.verdict))
        return said

    def as_json(self) -> dict[str, Any]:
        e, s = self.evaluation, self.eval_set
        return {
            "id": e.id, "graph_id": e.graph_id, "set": {"id": s.id, "name": s.name, "revision": s.revision},
            "candidate_version": e.candidate_version, "baseline_version": e.baseline_version,
            "repetitions": e.repetitions, "rules": e.rules, "status": e.status, "created_by": e.created_by,
            "created_at": e.created_at, "completed_at": e.completed_at, "verdict": e.verdict, "error": e.error,
            "cases": [c.as_json() for c in self.cases],
        }  # fmt: skip


def evaluation_report(store: Store, evaluation_id: str) -> EvaluationReport:
    """The evaluation with each case's results and outcome, as recorded now."""
    evaluation = store.evaluations.evaluation(evaluation_id)
    eval_set = store.evaluations.set_by_id(evaluation.set_id)
    kept = {(r.case_id, r.side, r.repetition): r for r in store.evaluations.results(evaluation_id)}
    rules, _ = rules_of(evaluation)
    shown = []
    for case in store.evaluations.cases(eval_set.id):
        pair = pair_of(case, kept, evaluation.repetitions)
        outcome = case_event(case, decide([pair], rules).cases[0]) if pair is not None else None
        tries = [
            kept[(case.id, CANDIDATE, r)] for r in range(evaluation.repetitions) if (case.id, CANDIDATE, r) in kept
        ]
        shown.append(CaseReport(case, outcome, kept.get((case.id, BASELINE, 0)), tries))
    return EvaluationReport(evaluation, eval_set, shown)


def _result_json(result: EvalResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    found = result.score or {}
    return {
        "repetition": result.repetition, "run_id": result.run_id, "passed": result.passed,
        "score": found.get("score"), "level": found.get("level"), "note": found.get("note") or None,
        "incomparable": result.incomparable, "output": result.output, "fields": found.get("fields") or [],
    }  # fmt: skip
