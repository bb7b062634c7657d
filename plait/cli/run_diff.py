"""`plait runs diff RUN_A RUN_B`: two runs side by side, node by node.

Exit 0 whenever the diff was produced, whether or not the runs differ: a difference is the
answer, not an error (scripts read `counts` or the verdicts in `--json`). Exit 2 for an
unknown run id.

`--json` prints one object:
    {"a": RUN, "b": RUN, "same_graph", "same_version", "outputs_equal",
     "counts": {"same": n, "changed": n, "status": n, "only_a": n, "only_b": n},
     "nodes": [{"node_id", "verdict": "same|changed|status|only_a|only_b",
                "a": SIDE | null, "b": SIDE | null,
                "changes": [{"path": "$.field[0].x", "kind": "added|removed|changed", "old", "new"}],
                "text_diffs": {path: unified diff}, "notes": ["$.items: 2 items → 3 items"]}]}
RUN = {id, graph_id, graph, graph_version, status, output, tokens_input, tokens_output, cost_usd};
SIDE = {status (null: in that run's graph, never ran), activation, output (effective, without
schema annotations), overridden, node_run_id}; a SIDE is null when the node is not in that run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

from plait.cli.common import console, print_json, print_table, resolve_run, store_for
from plait.cli.options import DbOption, JsonOption

if TYPE_CHECKING:
    from plait.runs.diff import Change, NodeDiff, NodeSide, RunDiff, RunFacts

_VALUE_CHARS = 200
"""Values longer than this are cut in the readable output (`--json` has them whole)."""
_VERDICT_STYLE = {"same": "green", "changed": "yellow", "status": "cyan", "only_a": "magenta", "only_b": "magenta"}
_VERDICT_TEXT = {"only_a": "only in A", "only_b": "only in B", "status": "status only"}


def diff_command(
    run_a: Annotated[str, typer.Argument(help="The first run id (A), or a unique prefix of it.")],
    run_b: Annotated[str, typer.Argument(help="The second run id (B), or a unique prefix of it.")],
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Compare two runs node by node: statuses, effective outputs, field-level changes."""
    from plait.runs.diff import diff_runs

    with store_for(db, "both runs must be in the one database that --db (or $PLAIT_DB) names") as store:
        diff = diff_runs(store, resolve_run(store, run_a), resolve_run(store, run_b))
    if json_output:
        print_json(diff.to_json())
        return
    render(diff)


def render(diff: RunDiff) -> None:
    """Header (the two runs), the node table, then what changed in each changed node."""
    from rich.markup import escape
    from rich.table import Table

    out = console()
    out.print(_facts_line("A", diff.a))
    out.print(_facts_line("B", diff.b))
    if not diff.same_graph:
        out.print(f"[yellow]runs of different graphs ({escape(diff.a.graph)} and {escape(diff.b.graph)}):[/] "
                  "nodes are matched by id")  # fmt: skip
    elif not diff.same_version:
        out.print(f"[yellow]graph versions differ: v{diff.a.graph_version} and v{diff.b.graph_version}[/]")
    if diff.a.status != diff.b.status:
        out.print(f"run status: {diff.a.status} → {diff.b.status}")
    if not diff.same_model:
        _print_models(out, diff)
    out.print("run outputs: " + ("[green]equal[/]" if diff.outputs_equal else "[yellow]differ[/]"))
    table = Table()
    for column in ("node", "A status", "B status", "verdict"):
        table.add_column(column, no_wrap=True)
    for node in diff.nodes:
        style = _VERDICT_STYLE[node.verdict.value]
        verdict = _VERDICT_TEXT.get(node.verdict.value, node.verdict.value)
        table.add_row(escape(node.node_id), _status(node.a), _status(node.b), f"[{style}]{verdict}[/]")
    print_table(table, out)
    for node in diff.nodes:
        if node.changes:
            _print_changes(out, node)
    counts = ", ".join(f"{n} {_VERDICT_TEXT.get(v, v)}" for v, n in diff.counts().items() if n)
    out.print(counts or "no nodes")


def _print_models(out: Any, diff: RunDiff) -> None:
    """Which model each run executed on, and the changes of model made on it (`--llm` later)."""
    from rich.markup import escape

    from plait.runs.model_choice import label

    for name, facts in (("A", diff.a), ("B", diff.b)):
        out.print(f"[yellow]model {name}:[/] {escape(label(facts.llm))}")
        for change in facts.llm_history:
            out.print(
                f"  changed by {escape(str(change.get('by')))}: "
                f"{escape(label(change.get('from')))} -> {escape(label(change.get('to')))}"
            )


def _facts_line(label: str, facts: RunFacts) -> str:
    from rich.markup import escape

    return (
        f"[bold]{label}[/] run {facts.id}  graph {escape(facts.graph)} v{facts.graph_version}  "
        f"status [bold]{facts.status}[/]  tokens {facts.tokens_input}+{facts.tokens_output}  "
        f"cost ${facts.cost_usd:.4f}"
    )


def _status(side: NodeSide | None) -> str:
    if side is None:
        return "[dim]—[/]"
    if side.status is None:
        return "[dim]not run[/]"
    return side.status + (f" (activation {side.activation})" if side.activation and side.activation > 1 else "")


def _print_changes(out: Any, node: NodeDiff) -> None:
    from rich.markup import escape

    out.print(f"\n[bold]{escape(node.node_id)}[/] [yellow]changed[/]")
    for note in node.notes:
        out.print(f"  [dim]{escape(note)}[/]")
    for change in node.changes:
        out.print("  " + _change_line(change))
    for path, text in node.text_diffs.items():
        out.print(f"  [bold]{escape(path)}[/] (text diff):")
        for line in text.splitlines():
            colour = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            out.print(f"    [{colour}]{escape(line)}[/]", soft_wrap=True)


def _change_line(change: Change) -> str:
    from rich.markup import escape

    path = escape(change.path)
    if change.kind == "added":
        return f"[green]+ {path}: {escape(_short(change.new))}[/]"
    if change.kind == "removed":
        return f"[red]- {path}: {escape(_short(change.old))}[/]"
    return f"~ {path}: [red]{escape(_short(change.old))}[/] → [green]{escape(_short(change.new))}[/]"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False).replace("\n", " ")
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 1] + "…"
