"""`plait runs list|show|diff|check`: what ran, how it went, every node's record, how two runs differ, and
whether a run is consistent after its corrections."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from plait.cli.common import print_json, print_table, store_for, store_named, when
from plait.cli.help import PlaitTyper
from plait.cli.options import DbOption, JsonOption
from plait.cli.run_admin import cancel_command, delete_command
from plait.cli.run_check import check_command
from plait.cli.run_diff import diff_command
from plait.cli.run_show import show_command
from plait.cli.run_watch import watch_command

app = PlaitTyper(help="Inspect runs.", no_args_is_help=True)


@app.command("list")
def list_runs(
    graph: Annotated[str | None, typer.Option("--graph", help="Only runs of this graph (id or slug).")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Only runs with this status.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first.")] = 50,
    children: Annotated[
        bool, typer.Option("--children", help="Include child runs (of SUBGRAPH, MAP and LOOP nodes).")
    ] = False,
    every: Annotated[bool, typer.Option("--all", help="Include the runs evaluations made (`plait eval run`).")] = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """List runs, newest first (child runs with --children, the runs of evaluations with --all)."""
    with store_for(db) as store:
        runs = store.runs.list(graph=graph, status=status, limit=limit, children=children, evaluations=every)
        if not runs and not json_output:
            sys.stderr.write(f"no runs{' that match' if graph or status else ''} in {store_named(store, db)}\n")
    if json_output:
        print_json([r.summary() for r in runs])
        return
    from rich.table import Table

    table = Table(title="runs")
    table.add_column("id", no_wrap=True)
    for column in ("graph", "version", "status", "created", "tokens", "cost $"):
        table.add_column(column, no_wrap=True)
    for r in runs:
        table.add_row(
            r.id,
            r.graph_slug if r.body is None else f"{r.graph_slug} › {r.body}",
            str(r.graph_version),
            r.status,
            when(r.created_at),
            str(r.tokens_input + r.tokens_output),
            f"{r.cost_usd:.4f}",
        )
    print_table(table)


app.add_commands(
    {
        "show": show_command,
        "watch": watch_command,
        "diff": diff_command,
        "check": check_command,
        "cancel": cancel_command,
        "delete": delete_command,
    }
)
