"""`plait eval build | show`: evaluation sets, the cases a new version of a graph is scored on
before it is promoted (docs/evaluation.md).

A set is built from what people said of the graph's outputs (corrections, approvals) and never
changes: building under a name already taken writes its next revision. Each command of the group
is a function registered on `app` below; a new one goes beside them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from plait.cli.common import fail, print_json, print_table, refuse, store_for, when
from plait.cli.eval_run import run_command
from plait.cli.help import PlaitTyper
from plait.cli.options import DbOption, JsonOption

if TYPE_CHECKING:
    from plait.store.evaluations import EvalCase, EvalSet

app = PlaitTyper(help="Evaluation sets: build them from corrections and approvals, show them.", no_args_is_help=True)
app.command("run")(run_command)  # `plait eval run`, in its own module: plait/cli/eval_run.py
GraphArg = Annotated[str, typer.Argument(help="A stored graph's id or slug (`plait graphs list`).")]
GRAPHS_HINT = "give a stored graph's id or slug (`plait graphs list`)"
BY = "cli"


@app.command("build")
def build_command(
    graph: GraphArg,
    name: Annotated[str, typer.Option("--name", help="The set's name: lower-case letters, digits, '_', '.', '-'.")],
    sources: Annotated[
        str, typer.Option("--from", help="Where cases come from: corrections, approvals, or both (comma-separated).")
    ] = "corrections,approvals",
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only what was judged since: a date (2026-12-01) or a duration back (7d, 12h)."),
    ] = None,
    nodes: Annotated[str | None, typer.Option("--nodes", help="Only these nodes' cases (comma-separated ids).")] = None,
    level: Annotated[
        str, typer.Option("--level", help="node: each judged node run is a case; run: each judged run's output.")
    ] = "node",
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Build an evaluation set (the next revision of NAME) from the graph's corrected and approved
    outputs. Exit 2 when there is nothing to build it from."""
    from plait.runs.eval_build import LEVELS, NAME, SOURCES, EvalBuildError, build_set, since_time

    chosen = [s.strip() for s in sources.split(",") if s.strip()]
    if not chosen or any(s not in SOURCES for s in chosen):
        fail(f"--from '{sources}' is not a list of {' and '.join(SOURCES)}", "e.g. --from corrections,approvals")
    if level not in LEVELS:
        fail(f"--level '{level}' is not one of {', '.join(LEVELS)}")
    if not NAME.match(name):
        fail(f"--name '{name}' is not a set name", "use lower-case letters, digits, '_', '.' and '-' (at most 120)")
    try:
        after = None if since is None else since_time(since)
    except EvalBuildError:
        fail(f"--since '{since}' is neither a date nor a duration", "e.g. --since 2026-12-01 or --since 7d")
    only = None if nodes is None else [n.strip() for n in nodes.split(",") if n.strip()]
    with store_for(db, GRAPHS_HINT) as store:
        try:
            made = build_set(store, graph, name=name, sources=chosen, since=after, nodes=only, level=level, by=BY)
        except EvalBuildError as exc:
            refuse(exc)
    if json_output:
        print_json(set_json(made))
        return
    labels = made.built_from.get("labels") or {}
    skipped = made.built_from.get("skipped") or {}
    print(f"{made.ref}: {made.cases} cases ({labels.get('corrected', 0)} corrected, "
          f"{labels.get('approved', 0)} approved) from {made.built_from.get('runs', 0)} runs")  # fmt: skip
    if skipped.get("count"):
        sys.stderr.write(f"skipped {skipped['count']} whose expected value fails its schemas:\n")
        for item in skipped.get("cases", []):
            sys.stderr.write(f"  run {item['run_id'][:8]} {item['node_id'] or ''}: {item['reason']}\n")
    sys.stderr.write(f"see them: plait eval show {graph} {made.ref}\n")


@app.command("show")
def show_command(
    graph: GraphArg,
    set_name: Annotated[
        str | None, typer.Argument(metavar="[NAME[@REV]]", help="A set (its newest revision unless @REV).")
    ] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """The graph's evaluation sets and their revisions, or one set's cases: what was asked, what
    came out, and what a person said it should be."""
    from plait.runs.eval_build import EvalBuildError, list_sets, set_ref, show_set
    from plait.store import NotFoundError

    with store_for(db, GRAPHS_HINT) as store:
        if set_name is None:
            sets = list_sets(store, graph)
            _sets(graph, sets, json_output)
            return
        try:
            name, revision = set_ref(set_name)
        except EvalBuildError:
            fail(f"'{set_name}' is not NAME or NAME@REV", f"e.g. plait eval show {graph} triage@2")
        store.graphs.get(graph)
        try:
            shown = show_set(store, graph, name, revision)
        except NotFoundError as exc:
            fail(str(exc), f"`plait eval show {graph}` lists its sets", kind="not_found")
    if json_output:
        print_json({"set": set_json(shown.set), "cases": [case_json(c) for c in shown.cases]})
        return
    _cases(graph, shown.set, shown.cases)


def set_json(made: EvalSet) -> dict[str, Any]:
    """A set as `--json` prints it (the fields of `GET /api/graphs/{ref}/eval-sets`)."""
    return {"id": made.id, "graph_id": made.graph_id, "name": made.name, "revision": made.revision,
            "ref": made.ref, "cases": made.cases, "built_from": made.built_from, "created_by": made.created_by,
            "created_at": made.created_at}  # fmt: skip


def case_json(case: EvalCase) -> dict[str, Any]:
    """A case as `--json` prints it, with a one-line `diff` of its original and expected values."""
    from plait.runs.eval_build import short_diff

    return {"id": case.id, "position": case.position, "level": case.level, "label": case.label,
            "critical": case.critical, "source_run_id": case.source_run_id, "node_run_id": case.node_run_id,
            "node_id": case.node_id, "graph_version": case.graph_version, "ledger_version": case.ledger_version,
            "input": case.input, "original": case.original, "expected": case.expected, "schemas": case.schemas,
            "judged_by": case.judged_by, "judged_at": case.judged_at, "note": case.note,
            "diff": short_diff(case.original, case.expected)}  # fmt: skip


def _sets(graph: str, sets: list[EvalSet], json_output: bool) -> None:
    if json_output:
        print_json([set_json(s) for s in sets])
        return
    if not sets:
        sys.stderr.write(f"graph {graph} has no evaluation sets; build one: plait eval build {graph} --name NAME\n")
        return
    from rich.table import Table

    table = Table("set", "cases", "corrected", "approved", "skipped", "level", "from", "since", "nodes", "built", "by")
    for s in sets:
        built = s.built_from
        labels = built.get("labels") or {}
        table.add_row(
            s.ref, str(s.cases), str(labels.get("corrected", "")), str(labels.get("approved", "")),
            str((built.get("skipped") or {}).get("count", 0)), str(built.get("level", "")),
            ",".join(built.get("sources") or []), when(built.get("since")), ",".join(built.get("nodes") or []),
            when(s.created_at), s.created_by,
        )  # fmt: skip
    print_table(table)


def _cases(graph: str, shown: EvalSet, cases: list[EvalCase]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from plait.runs.eval_build import short_diff

    built = shown.built_from
    sys.stderr.write(f"{shown.ref} of {graph}: {shown.cases} cases at {built.get('level', 'node')} level from "
                     f"{' and '.join(built.get('sources') or [])}, built {when(shown.created_at)} by "
                     f"{shown.created_by}\n")  # fmt: skip
    table = Table("#", "level", "label", "run", "node", "judged by", "judged at", "note", "change")
    for case in cases:
        change = short_diff(case.original, case.expected) or "(as produced)"
        table.add_row(
            str(case.position), case.level, case.label, case.source_run_id[:8], case.node_id or "(run)",
            case.judged_by or "", when(case.judged_at), escape(case.note or ""), escape(change),
        )  # fmt: skip
    print_table(table)
