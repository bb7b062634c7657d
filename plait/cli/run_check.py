"""`plait runs check RUN`: whether a run (and its child runs) is consistent once its corrections
have settled: every node read the values in effect or is marked stale, its input snapshot agrees
with its predecessors, the ledger holds every output, branches are as the CONDITIONs decide, and
the run's output is its exit nodes' (docs/corrections.md, "Checking a run").

Exit 0 when consistent, 1 when a problem was found (each listed on stdout with what to do), 2 when
the check could not be made (an unknown run, a database that cannot be opened). `--json` prints
`{"run_id", "consistent", "checked", "problems": [{"kind", "run_id", "node_id", "node_run_id",
"activation", "message", "hint"}]}`, as `GET /api/runs/{id}/check` answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from plait.cli.common import EXIT_FAILED, EXIT_OK, print_json, resolve_run, store_for
from plait.cli.options import DbOption, JsonOption

if TYPE_CHECKING:
    from plait.runs.check import Problem, RunCheck


def check_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN_ID", help="The run id (or a unique prefix of it).")],
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Check that a run is consistent after its corrections: exit 0 if so, 1 listing each problem and its fix."""
    from plait.runs.check import check_run

    with store_for(db) as store:
        result = check_run(store, resolve_run(store, run_ref))
    if json_output:
        print_json(result.as_json())
    else:
        typer.echo("\n".join(lines(result)))
    raise typer.Exit(EXIT_OK if result.consistent else EXIT_FAILED)


def lines(result: RunCheck) -> list[str]:
    """The readable report: one line when consistent, else each problem with its message and hint."""
    runs = "node run" if result.checked == 1 else "node runs"
    if result.consistent:
        return [f"consistent: {result.checked} {runs} checked"]
    count = len(result.problems)
    shown = [f"inconsistent: {count} problem{'s' if count > 1 else ''} in {result.checked} {runs} checked"]
    for problem in result.problems:
        shown.extend(_problem_lines(problem, result.run_id))
    return shown


def _problem_lines(problem: Problem, root: str) -> list[str]:
    where = [] if problem.run_id == root else [f"child run {problem.run_id}"]
    if problem.node_id is not None:
        where.append(problem.node_id)
    head = f"- {', '.join(where) or f'run {problem.run_id}'}: {problem.kind}"
    if problem.node_run_id is not None:
        head += f" (node run {problem.node_run_id}, activation {problem.activation})"
    return [head, f"    {problem.message}", f"    hint: {problem.hint}"]
