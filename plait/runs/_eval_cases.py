"""One case of an evaluation on one graph version: how it is executed (the node alone on the
values the case recorded, or the whole graph on the case's run input), the run that executes it,
and what that run answered.

Node level is the default: only the case's node runs, on the recorded run input and upstream
values read at the version's schemas (`_eval_values`), its neighbours placed around it
(`_eval_layout`). When the recorded values cannot be read there or do not place the node (a
breaking schema change without a migration, an upstream node renamed, a node that now reads a
value the case did not record), the whole graph runs on the case's run input, if that input is
valid for the version, and the node's output in it is scored; otherwise the case cannot be
compared on that side, and the reason says why.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from plait.engine.fewshot import FEWSHOT_EXCLUDE
from plait.engine.run_input import StartError, check_input
from plait.errors import PlaitError, Refusal
from plait.model.enums import NodeStatus, RunStatus
from plait.runs._eval_layout import Layout, NotPlaced, layout
from plait.runs._eval_values import Unreadable, VersionReader
from plait.store import Store, StoredGraph, current_activations
from plait.store.evaluation_runs import PreparedRun
from plait.store.evaluations import EvalCase

NODE, RUN = "node", "run"
RUN_IDS = uuid.UUID("1c6f4f8e-3f8a-4d0b-9a53-6d1e7b2f0c11")
"""The namespace of evaluation runs' ids: the same case, side, repetition and level always make
the same run, so a resumed evaluation drives the run it had started instead of paying again."""


class Incomparable(Exception):
    """The case cannot be scored on this side; the message says why."""


class Interrupted(PlaitError):
    """An evaluation's run stopped before it ended (the process is stopping, resources ran
    short): nothing is recorded for it, and driving the evaluation again drives it on."""

    kind = Refusal.CONFLICT
    code = "evaluation_interrupted"


@dataclass(frozen=True, slots=True)
class Plan:
    """How a case runs on one version: `level` node or run; `target` the node whose output is
    scored (None: the run's output, for a run-level case); `note` why a node-level case runs whole."""

    level: str
    input: dict[str, Any]
    target: str | None
    layout: Layout | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class Answer:
    """What a run answered for a case: the output scored, and the run."""

    run_id: str
    output: Any


def plan_case(case: EvalCase, stored: StoredGraph, reader: VersionReader) -> Plan:
    """How `case` runs on `stored` (whose schemas `reader` reads at); Incomparable when it cannot."""
    version = stored.version
    if case.level == RUN:
        whole: dict[str, Any] = case.input if isinstance(case.input, dict) else {}
        _valid_input(stored, whole, "")
        return Plan(RUN, whole, None)
    recorded = case.input if isinstance(case.input, dict) else {}
    given_input = recorded.get("input")
    run_input: dict[str, Any] = given_input if isinstance(given_input, dict) else {}
    if case.node_id is None or case.node_id not in reader.compiled.nodes:
        raise Incomparable(f"node '{case.node_id}' is not in version {version}")
    try:
        _valid_input(stored, run_input, "")
        upstream = recorded.get("upstream") or {}
        missing = sorted(set(upstream) - set(reader.compiled.nodes))
        if missing:
            names = ", ".join(f"'{m}'" for m in missing)
            raise NotPlaced(f"the case read {names}, which version {version} does not have (renamed or removed)")
        given = {u: reader.output(u, v, what=f"the recorded value of '{u}'") for u, v in upstream.items()}
        return Plan(NODE, run_input, case.node_id, layout(reader.compiled, case.node_id, given, run_input))
    except (Unreadable, NotPlaced) as exc:
        reason = str(exc)
    _valid_input(stored, run_input, f"{reason}; ")
    return Plan(RUN, run_input, case.node_id, note=f"evaluated at run level: {reason}")


def _valid_input(stored: StoredGraph, run_input: dict[str, Any], before: str) -> None:
    try:
        check_input(stored, run_input)
    except StartError as exc:
        details = f" ({'; '.join(exc.details[:3])})" if exc.details else ""
        raise Incomparable(
            f"{before}the case's run input is not valid for version {stored.version}: {exc.message}{details}"
        ) from None


def run_id_of(evaluation_id: str, case_id: str, side: str, repetition: int, level: str) -> str:
    return str(uuid.uuid5(RUN_IDS, f"{evaluation_id}/{case_id}/{side}/{repetition}/{level}"))


def prepared_run(
    run_id: str,
    case: EvalCase,
    stored: StoredGraph,
    plan: Plan,
    *,
    fresh: bool,
    time_split: bool,
    llm: dict[str, Any] | None,
) -> PreparedRun:
    """The run that executes `plan`: its few-shot pools leave out the case's own correction (and
    with `time_split` every correction made after it); `fresh`: its model calls are not answered
    from the response cache (repetitions must differ)."""
    excluded: dict[str, Any] = {
        "runs": [case.source_run_id],
        "node_runs": [case.node_run_id] if case.node_run_id else [],
    }
    excluded["before"] = case.judged_at if time_split else None
    options = {FEWSHOT_EXCLUDE: excluded}
    lay = plan.layout
    note = f"recorded by evaluation case {case.id} (run {case.source_run_id})"
    return PreparedRun(
        run_id=run_id,
        graph_id=stored.graph_id,
        graph_version=stored.version,
        schema_version=stored.schema_version,
        input=plan.input,
        options=options,
        llm=llm,
        fresh=fresh,
        given=lay.given if lay else {},
        stale=lay.stale if lay else {},
        skipped=lay.skipped if lay else [],
        queued=[lay.target] if lay else (stored_nodes(stored) if fresh else []),
        note=note if lay else None,
    )


def stored_nodes(stored: StoredGraph) -> list[str]:
    """The graph version's nodes, SKILLs expanded (what its runs hold node runs of)."""
    from plait.engine.state import CompiledRun

    return list(CompiledRun.from_graph(stored.graph).nodes)


def answer(store: Store, run_id: str, plan: Plan) -> Answer:
    """What the run answered for the case once it was driven; Incomparable when it failed or did
    not reach the node, Interrupted when it has not ended."""
    run = store.runs.get(run_id)
    if plan.target is None:
        if run.status == RunStatus.COMPLETED:
            return Answer(run_id, run.output)
        if run.status == RunStatus.PAUSED and run.wake_at is None:
            raise Incomparable(f"the run {run_id} waits for a person before it has an output")
        _not_ended(run.status, run_id)
        raise Incomparable(f"the run {run_id} ended {run.status}: {(run.error or {}).get('message', '')}".rstrip(": "))
    rec = current_activations(store.runs.node_runs(run_id)).get(plan.target)
    if rec is not None and rec.status.has_output and rec.status != NodeStatus.STALE:
        return Answer(run_id, rec.effective_output)
    if rec is not None and rec.status == NodeStatus.FAILED:
        message = (rec.error or {}).get("message") or "no reason recorded"
        raise Incomparable(f"the run {run_id} failed at '{plan.target}': {message}")
    if rec is not None and rec.status == NodeStatus.PENDING and rec.input_snapshot is not None:
        raise Incomparable(f"'{plan.target}' waits for a person in run {run_id}")
    _not_ended(run.status, run_id)
    why = (run.error or {}).get("message")
    raise Incomparable(
        f"'{plan.target}' did not run in run {run_id}: it ended {run.status}" + (f" ({why})" if why else "")
    )


def _not_ended(status: RunStatus, run_id: str) -> None:
    if status not in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED):
        raise Interrupted(
            f"the evaluation's run {run_id} stopped before it ended (it is {status})",
            "run the same evaluation again: it goes on from where it stopped",
        )
