"""`plait eval run`: a candidate version of a graph scored on an evaluation set, against the
recorded outputs (or another version), and the gate's verdict (docs/evaluation.md, "Running an
evaluation").

Each case runs here as ordinary runs on the model `--llm`/`--config` name (left out of `plait
runs list` unless `--all`). Stopped part-way (Ctrl-C, a crash), the same command goes on from
where it stopped: what was recorded is kept. Exit 0 pass, 1 fail, 3 inconclusive, 2 refused.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated, Any

import typer

from plait.cli.common import fail, print_json, print_table, store_for
from plait.cli.options import DbOption, Driving, drives_a_run

BY = "cli"
OUTCOMES = {"fixed": "fixed", "regressed": "regressed", "still_wrong": "still wrong", "still_right": "still right",
            "incomparable": "incomparable"}  # fmt: skip


SetOption = Annotated[
    str, typer.Option("--set", metavar="NAME[@REV]", help="The evaluation set (its newest revision unless @REV).")
]
VersionOption = Annotated[int | None, typer.Option("--version", help="The candidate version (default: the newest).")]
BaselineOption = Annotated[
    int | None,
    typer.Option("--baseline-version", help="Run this version afresh as the baseline (default: the recorded outputs)."),
]
RepeatOption = Annotated[
    int,
    typer.Option(
        "--repeat", min=1, help="Candidate runs per case, for a sampling model (more than 1: never from the cache)."
    ),
]
RegressionsOption = Annotated[int, typer.Option("--max-regressions", min=0, help="Regressions allowed.")]
AlphaOption = Annotated[
    float, typer.Option("--alpha", help="Significance of the McNemar test that the candidate is worse.")
]
DropOption = Annotated[
    float, typer.Option("--max-approved-drop", help="How far the approved cases' pass rate may drop (0.02: 2 points).")
]
MinCasesOption = Annotated[
    int, typer.Option("--min-cases", min=0, help="Fewer comparable cases than this: inconclusive.")
]
TimeSplitOption = Annotated[
    bool, typer.Option("--time-split", help="Few-shot pools leave out every correction made after the case's.")
]
ConcurrencyOption = Annotated[
    int,
    typer.Option("--concurrency", min=1, max=256, help="Cases driven at once (the provider pool still limits calls)."),
]
DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Print each side's calls, estimated tokens and cost; call no model.")
]


@drives_a_run
def run_command(
    graph: Annotated[str, typer.Argument(help="A stored graph's id or slug (`plait graphs list`).")],
    set_ref: SetOption,
    version: VersionOption = None,
    baseline_version: BaselineOption = None,
    repeat: RepeatOption = 1,
    max_regressions: RegressionsOption = 0,
    alpha: AlphaOption = 0.05,
    max_approved_drop: DropOption = 0.0,
    min_cases: MinCasesOption = 10,
    time_split: TimeSplitOption = False,
    concurrency: ConcurrencyOption = 4,
    dry_run: DryRunOption = False,
    db: DbOption = None,
    *,
    how: Driving,
) -> None:
    """Score a candidate version on an evaluation set against the baseline, case by case, and
    decide the gate. Exit 0 pass, 1 fail, 3 inconclusive."""
    from plait.evaluation import EvaluationError, GateRules
    from plait.runs.eval_run import RECORDED, resolve, start_evaluation

    try:
        rules = GateRules(max_regressions, alpha, max_approved_drop, min_cases)
    except EvaluationError as exc:
        fail(exc.message, exc.hint)
    baseline: str | int = RECORDED if baseline_version is None else baseline_version
    provider, selection = _chosen(how)
    with store_for(db) as store:
        if dry_run:
            target = resolve(store, graph, set_ref, candidate_version=version, baseline=baseline, repetitions=repeat,
                             rules=rules, time_split=time_split)  # fmt: skip
            _estimate(store, target, provider, how)
            return
        evaluation = start_evaluation(store, graph, set_ref, candidate_version=version, baseline=baseline,
                                      repetitions=repeat, rules=rules, by=BY, time_split=time_split)  # fmt: skip
        report = _drive(store, evaluation.id, provider, selection, how, concurrency)
    _print(report, how)
    raise typer.Exit(report.exit_code if report.exit_code is not None else 1)


def _chosen(how: Driving) -> tuple[Any, Any]:
    from plait.llm.select import LlmConfigError
    from plait.runs.model_choice import chosen

    try:
        return chosen(how.llm, how.config)
    except LlmConfigError as exc:
        fail(str(exc))


def _drive(store: Any, evaluation_id: str, provider: Any, selection: Any, how: Driving, concurrency: int) -> Any:
    """Drive the evaluation here (each case's runs on `provider`), saying each case as it is scored."""
    from plait.cli import interrupt
    from plait.cli.drive import session_for
    from plait.engine.outcome import EngineError
    from plait.runs.eval_run import Interrupted, default_similarity, run_evaluation

    evaluation = store.evaluations.evaluation(evaluation_id)
    session = session_for(store, provider, how)
    try:
        session.check_executable(store.graphs.get(evaluation.graph_id, evaluation.candidate_version))
        if evaluation.baseline_version is not None:
            session.check_executable(store.graphs.get(evaluation.graph_id, evaluation.baseline_version))
    except EngineError as exc:
        asyncio.run(session.aclose())
        fail(str(exc), "choose a model that can run the graph with --llm or --config")
    done = len(store.evaluations.results(evaluation_id))
    if not how.quiet and not how.json_output:
        again = f", going on after {done} recorded results" if done else ""
        sys.stderr.write(f"evaluation {evaluation_id} of version {evaluation.candidate_version}{again}\n")
    said = None if how.quiet or how.json_output else _say
    main = run_evaluation(store, evaluation_id, session.finish, similarity=default_similarity(), llm=selection,
                          concurrency=concurrency, on_event=said)  # fmt: skip
    try:
        return interrupt.run(main, cleanup=session.aclose)
    except interrupt.Interrupted:
        sys.stderr.write(f"interrupted: run the same command again to go on (evaluation {evaluation_id})\n")
        raise typer.Exit(interrupt.EXIT_INTERRUPTED) from None
    except Interrupted as exc:
        fail(exc.message, exc.hint, code=interrupt.EXIT_INTERRUPTED, kind=exc.code)
    except EngineError as exc:
        fail(str(exc), f"run the same command again to go on (evaluation {evaluation_id})")


def _say(kind: str, data: dict[str, Any]) -> None:
    if kind == "case":
        why = f" ({data['reason']})" if data.get("reason") else ""
        sys.stderr.write(f"  #{data['position']} {data['label']} {data.get('node_id') or '(run)'}: "
                         f"{OUTCOMES.get(data['outcome'], data['outcome'])}{why}\n")  # fmt: skip


def _print(report: Any, how: Driving) -> None:
    if how.json_output:
        print_json({**report.as_json(), "exit_code": report.exit_code})
        return
    from rich.markup import escape
    from rich.table import Table

    table = Table("#", "label", "node", "level", "baseline", "candidate", "outcome", "why")
    for shown in report.cases:
        data = shown.as_json()
        tries = [r for r in data["candidate"] if r]
        levels = sorted({str(r.get("level")) for r in tries if r.get("level")})
        table.add_row(
            str(data["position"]), data["label"], data["node_id"] or "(run)", ",".join(levels) or "-",
            _passed(data["baseline"]), ",".join(_passed(r) for r in tries) or "-",
            OUTCOMES.get(str(data["outcome"]), "-"), escape(_why(data)),
        )  # fmt: skip
    print_table(table)
    for line in (report.verdict or {}).get("lines", []):
        print(line)


def _passed(result: dict[str, Any] | None) -> str:
    if result is None:
        return "-"
    if result.get("passed") is None:
        return "n/a"
    return "pass" if result["passed"] else "fail"


def _why(data: dict[str, Any]) -> str:
    if data.get("reason"):
        return str(data["reason"])
    notes = {r["note"] for r in data["candidate"] if r and r.get("note")}
    return "; ".join(sorted(notes))


def _estimate(store: Any, target: Any, provider: Any, how: Driving) -> None:
    from plait.runs.eval_run import estimate_evaluation

    found = asyncio.run(estimate_evaluation(store, target, provider))
    if how.json_output:
        print_json(found.as_json())
        return
    print(f"{found.cases} cases, {found.repetitions} candidate run(s) each; no model was called")
    sides = [("candidate", found.candidate, f"version {target.candidate.version}")]
    if found.baseline is not None and target.baseline is not None:
        sides.append(("baseline", found.baseline, f"version {target.baseline.version}"))
    else:
        print("baseline: the recorded outputs (no call)")
    for name, side, what in sides:
        print(f"{name} ({what}): {side.calls} calls, ~{side.tokens_in} prompt + ~{side.tokens_out} answer tokens, "
              f"~${side.cost_usd:.4f} ({side.node_level} cases at node level, {side.run_level} at run level, "
              f"{len(side.incomparable)} incomparable)")  # fmt: skip
        for item in side.incomparable:
            print(f"  #{item['position']}: {item['reason']}")
        for problem in side.problems:
            sys.stderr.write(f"  {problem}\n")
