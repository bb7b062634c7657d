"""Driving an evaluation to its verdict: each case's sides and repetitions executed (a few cases
at a time), scored and recorded once, then the gate.

Every result is written once per case, side and repetition (`put_result`: the first write wins),
and every run has an id derived from what it is for, so an evaluation stopped at any point and
driven again records nothing twice and pays for nothing twice: it skips what is recorded and
drives on the runs it had started. A run stopped before it ended (the process is going down)
records nothing; the evaluation stays `running` until it is driven again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from typing import Any

from plait.engine.state import CompiledRun
from plait.evaluation import CaseLabel, CaseOutcome, CasePair, GateRules, Similarity, Verdict, decide
from plait.model.output_meta import strip_meta_deep
from plait.runs._eval_cases import Answer, Incomparable, Plan, answer, plan_case, prepared_run, run_id_of
from plait.runs._eval_values import Unreadable, VersionReader, annotated_as, score_json, score_of, scored
from plait.store import Store, StoredGraph
from plait.store.evaluations import EvalCase, EvalResult, Evaluation

BASELINE, CANDIDATE = "baseline", "candidate"
Drive = Callable[[str], Awaitable[object]]
"""Drives a run until it ends or waits for a person (`RunSession.finish`, or a server's executor)."""
Emit = Callable[[str, dict[str, Any]], None]
"""`on_event(kind, data)`: "case" once a case is scored (in the cases' order), "verdict" at the end."""


def rules_of(evaluation: Evaluation) -> tuple[GateRules, bool]:
    """The gate's rules an evaluation was started with, and whether it splits by time."""
    kept = evaluation.rules
    names = ("max_regressions", "alpha", "max_approved_drop", "min_comparable")
    return GateRules(**{n: kept[n] for n in names if n in kept}), bool(kept.get("time_split"))


def gate_id(case: EvalCase) -> str:
    """How the gate's lines name a case: its position in the set."""
    return f"#{case.position}"


def pair_of(case: EvalCase, kept: dict[tuple[str, str, int], EvalResult], repetitions: int) -> CasePair | None:
    """The case scored on both sides, from its recorded results (None while some are missing)."""
    base = kept.get((case.id, BASELINE, 0))
    tries = [kept.get((case.id, CANDIDATE, r)) for r in range(repetitions)]
    if base is None or any(t is None for t in tries):
        return None
    done = [t for t in tries if t is not None]
    reason = next((r.incomparable for r in (base, *done) if r.incomparable), "") or ""
    candidate = [s for t in done if t.passed is not None and (s := score_of(t.score)) is not None]
    baseline = score_of(base.score) if base.passed is not None else None
    return CasePair(gate_id(case), CaseLabel(case.label), baseline, candidate, critical=case.critical, reason=reason)


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    """The verdict as an evaluation keeps it: its status, exit code and printed lines, and its figures."""
    return {
        "status": str(verdict.status), "exit_code": verdict.exit_code, "lines": verdict.lines(),
        "checks": [{"name": c.name, "status": str(c.status), "text": c.text} for c in verdict.checks],
        "cases": [outcome_json(o) for o in verdict.cases], "fields": [asdict(f) for f in verdict.fields],
        "sampling": {"count": verdict.sampling.count, "of": verdict.sampling.of},
        "judge": {"count": verdict.judge.count, "of": verdict.judge.of},
    }  # fmt: skip


def outcome_json(outcome: CaseOutcome) -> dict[str, Any]:
    found = asdict(outcome)
    return {**found, "label": str(outcome.label), "outcome": str(outcome.outcome)}


class Driver:
    """Drives one evaluation (see the module): `drive` executes its runs, `llm` is the model
    selection they record, `similarity` compares free texts by meaning."""

    def __init__(
        self,
        store: Store,
        evaluation: Evaluation,
        drive: Drive,
        *,
        similarity: Similarity | None = None,
        llm: dict[str, Any] | None = None,
        concurrency: int = 4,
        on_event: Emit | None = None,
    ) -> None:
        self.store = store
        self.evaluation = evaluation
        self.drive = drive
        self.similarity = similarity
        self.llm = llm
        self.concurrency = max(1, concurrency)
        self.emit = on_event or (lambda kind, data: None)
        self.rules, self.time_split = rules_of(evaluation)
        self._versions: dict[int, tuple[StoredGraph, VersionReader]] = {}
        self._plans: dict[tuple[str, int], Plan | Incomparable] = {}
        self.kept: dict[tuple[str, str, int], EvalResult] = {}

    async def run(self) -> Verdict:
        """Every case scored, then the verdict, recorded (`store.evaluations.finish`)."""
        evaluations = self.store.evaluations
        cases = await asyncio.to_thread(evaluations.cases, self.evaluation.set_id)
        await asyncio.to_thread(self._read_kept)
        await asyncio.to_thread(evaluations.finish, self.evaluation.id, "running")
        ordered = Ordered(cases, self)
        slots = asyncio.Semaphore(self.concurrency)

        async def one(case: EvalCase) -> None:
            async with slots:
                await self._case(case)
            ordered.done(case)

        try:
            async with asyncio.TaskGroup() as group:
                for case in cases:
                    group.create_task(one(case))
        except BaseExceptionGroup as group_error:  # the first cause, as if the cases ran one by one
            raise _first(group_error) from None
        verdict = decide([p for c in cases if (p := self.pair(c)) is not None], self.rules)
        kept = verdict_json(verdict)
        await asyncio.to_thread(evaluations.finish, self.evaluation.id, "completed", verdict=kept)
        self.emit("verdict", kept)
        return verdict

    def pair(self, case: EvalCase) -> CasePair | None:
        return pair_of(case, self.kept, self.evaluation.repetitions)

    # -- one case ----------------------------------------------------------------------------------------

    async def _case(self, case: EvalCase) -> None:
        _, reader = await asyncio.to_thread(self._version, self.evaluation.candidate_version)
        try:
            if case.level == "node" and case.node_id not in reader.compiled.nodes:
                raise Incomparable(f"node '{case.node_id}' is not in version {reader.version}")
            expected = await asyncio.to_thread(self._expected, case, reader)
        except (Incomparable, Unreadable) as exc:
            for side, repetition in self._missing(case):
                await self._record(case, side, repetition, None, None, reason=str(exc))
            return
        for side, repetition in self._missing(case):
            if side == BASELINE and self.evaluation.baseline_version is None:
                await self._recorded_baseline(case, reader, expected)
                continue
            version = self.evaluation.candidate_version if side == CANDIDATE else self.evaluation.baseline_version
            assert version is not None
            try:
                plan, found = await self._executed(case, version, side, repetition)
                actual = await asyncio.to_thread(reader.migrated, plan.target, found.output, what="the answer")
            except (Incomparable, Unreadable) as exc:
                await self._record(case, side, repetition, None, None, reason=str(exc))
                continue
            extra = {"level": plan.level, "note": plan.note, "version": version}
            got = await asyncio.to_thread(scored, reader.compiled, plan.target, expected, actual, self.similarity)
            await self._record(case, side, repetition, found.run_id, found.output, score=score_json(got, **extra))

    def _missing(self, case: EvalCase) -> list[tuple[str, int]]:
        wanted = [(BASELINE, 0), *((CANDIDATE, r) for r in range(self.evaluation.repetitions))]
        return [(side, r) for side, r in wanted if (case.id, side, r) not in self.kept]

    def _expected(self, case: EvalCase, reader: VersionReader) -> Any:
        value = annotated_as(case.expected, case.schemas)
        if case.level == "node" and case.node_id is not None:
            return reader.output(case.node_id, value, what="the expected value")
        return reader.migrated(None, value, what="the expected value")

    async def _recorded_baseline(self, case: EvalCase, reader: VersionReader, expected: Any) -> None:
        """The recorded output is the baseline: it costs nothing."""
        target = case.node_id if case.level == "node" else None
        try:
            original = annotated_as(case.original, case.schemas)
            actual = await asyncio.to_thread(reader.migrated, target, original, what="the recorded output")
        except Unreadable as exc:
            await self._record(case, BASELINE, 0, None, None, reason=str(exc))
            return
        got = await asyncio.to_thread(scored, reader.compiled, target, expected, actual, self.similarity)
        await self._record(case, BASELINE, 0, None, case.original, score=score_json(got, level="recorded"))

    async def _executed(self, case: EvalCase, version: int, side: str, repetition: int) -> tuple[Plan, Answer]:
        plan = await asyncio.to_thread(self._plan, case, version)
        stored, _ = self._version(version)
        run_id = run_id_of(self.evaluation.id, case.id, side, repetition, plan.level)
        fresh = self.evaluation.repetitions > 1
        prepared = prepared_run(run_id, case, stored, plan, fresh=fresh, time_split=self.time_split, llm=self.llm)
        await asyncio.to_thread(self.store.evaluations.create_run, prepared)
        await self.drive(run_id)
        return plan, await asyncio.to_thread(answer, self.store, run_id, plan)

    def _plan(self, case: EvalCase, version: int) -> Plan:
        key = (case.id, version)
        if key not in self._plans:
            stored, reader = self._version(version)
            try:
                self._plans[key] = plan_case(case, stored, reader)
            except Incomparable as exc:
                self._plans[key] = exc
        found = self._plans[key]
        if isinstance(found, Incomparable):
            raise found
        return found

    def _version(self, version: int) -> tuple[StoredGraph, VersionReader]:
        if version not in self._versions:
            stored = self.store.graphs.get(self.evaluation.graph_id, version)
            compiled = CompiledRun.from_graph(stored.graph)
            self._versions[version] = stored, VersionReader(compiled, version, f"evaluation:{self.evaluation.id}")
        return self._versions[version]

    # -- results -----------------------------------------------------------------------------------------

    async def _record(
        self,
        case: EvalCase,
        side: str,
        repetition: int,
        run_id: str | None,
        output: Any,
        *,
        score: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> None:
        passed = None if score is None else bool(score["passed"])
        result = EvalResult(self.evaluation.id, case.id, side, repetition, run_id, strip_meta_deep(output), score,
                            passed, reason)  # fmt: skip
        if await asyncio.to_thread(self.store.evaluations.put_result, result):
            self.kept[(case.id, side, repetition)] = result
        else:  # written meanwhile by another driver of this evaluation: its result stands
            await asyncio.to_thread(self._read_kept)

    def _read_kept(self) -> None:
        self.kept = {(r.case_id, r.side, r.repetition): r for r in self.store.evaluations.results(self.evaluation.id)}


class Ordered:
    """Announces scored cases in the set's order, whichever finishes first, so that a stream
    numbering them by position never skips one."""

    def __init__(self, cases: Sequence[EvalCase], driver: Driver) -> None:
        self.cases = list(cases)
        self.driver = driver
        self.next = 0
        self.finished: set[str] = set()

    def done(self, case: EvalCase) -> None:
        self.finished.add(case.id)
        while self.next < len(self.cases) and self.cases[self.next].id in self.finished:
            ready = self.cases[self.next]
            self.next += 1
            pair = self.driver.pair(ready)
            if pair is not None:
                self.driver.emit("case", case_event(ready, decide([pair], self.driver.rules).cases[0]))


def case_event(case: EvalCase, outcome: CaseOutcome) -> dict[str, Any]:
    """What is said of a scored case: where it is, how it came out, and why not when it could not."""
    return {
        "position": case.position, "case_id": case.id, "label": case.label, "node_id": case.node_id,
        "outcome": str(outcome.outcome), "baseline_passed": outcome.baseline_passed,
        "candidate_passed": outcome.candidate_passed, "agreement": outcome.agreement, "reason": outcome.reason,
    }  # fmt: skip


def _first(group: BaseExceptionGroup[Any]) -> BaseException:
    found: BaseException = group
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found
