"""What an evaluation would call and cost, without calling a model (`plait eval run --dry-run`).

Each case is planned as the evaluation would run it (node level on its recorded values, or the
whole graph), and rendered by the dry run (`plait.runs.dry_run`) with those values: at node level
the evaluated node's request counts, at run level every model call of the graph. Repetitions
multiply the candidate's side; a recorded baseline costs nothing. Few-shot examples are not in
the estimate (they are chosen when a run executes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plait.engine.runtime import Runtime
from plait.engine.state import CompiledRun
from plait.llm.provider import Provider
from plait.model.output_meta import strip_meta
from plait.runs._eval_cases import Incomparable, plan_case
from plait.runs._eval_values import VersionReader
from plait.runs.dry_run import dry_run
from plait.store import Store, StoredGraph


@dataclass
class SideCost:
    """One side's estimate: model calls, prompt and answer tokens, cost, and the cases it could not plan."""

    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    node_level: int = 0
    run_level: int = 0
    incomparable: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass
class Estimate:
    """Both sides' estimates (`baseline` None: the recorded outputs, which cost nothing)."""

    cases: int
    repetitions: int
    candidate: SideCost
    baseline: SideCost | None

    def as_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "repetitions": self.repetitions,
            "candidate": self.candidate.as_json(),
            "baseline": self.baseline.as_json() if self.baseline is not None else None,
        }


async def estimate(
    store: Store, set_id: str, candidate: StoredGraph, baseline: StoredGraph | None, repetitions: int,
    provider: Provider | None,
) -> Estimate:  # fmt: skip
    """The estimate of evaluating `candidate` (and `baseline`, when a version) on the set."""
    cases = store.evaluations.cases(set_id)
    runtime = Runtime(provider)
    try:
        ours = await _side(store, cases, candidate, runtime, repetitions)
        theirs = await _side(store, cases, baseline, runtime, 1) if baseline is not None else None
    finally:
        runtime.close_sandbox()
    return Estimate(len(cases), repetitions, ours, theirs)


async def _side(store: Store, cases: list[Any], stored: StoredGraph, runtime: Runtime, times: int) -> SideCost:
    reader = VersionReader(CompiledRun.from_graph(stored.graph), stored.version, "estimate")
    cost = SideCost()
    for case in cases:
        try:
            plan = plan_case(case, stored, reader)
        except Incomparable as exc:
            cost.incomparable.append({"position": case.position, "case_id": case.id, "reason": str(exc)})
            continue
        upstream = {k: strip_meta(v) for k, v in (plan.layout.given if plan.layout else {}).items()}
        dry = await dry_run(stored.graph, plan.input, runtime, upstream)
        nodes = [n for n in dry.nodes if n.messages is not None and (plan.layout is None or n.node_id == plan.target)]
        cost.node_level += plan.layout is not None
        cost.run_level += plan.layout is None
        cost.calls += times * len(nodes)
        cost.tokens_in += times * sum(n.tokens_in for n in nodes)
        cost.tokens_out += times * sum(n.tokens_out for n in nodes)
        cost.cost_usd += times * sum(n.cost_usd for n in nodes)
        for node in nodes:
            cost.problems.extend(f"case #{case.position}: node '{node.node_id}': {p}" for p in node.problems)
    return cost
