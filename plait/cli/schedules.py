"""`plait schedules add | list | show | pause | resume | delete`: cron schedules of graphs.
A schedule fires while a scheduler runs: `plait serve`, or `plait worker --beat`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import console, fail, parse_inputs, print_json, print_table, store_for, store_named, when_in
from plait.cli.help import PlaitTyper
from plait.cli.options import DbOption, JsonOption

app = PlaitTyper(help="Cron schedules of graphs: add, list, show, pause, resume, delete.", no_args_is_help=True)
IdArg = Annotated[str, typer.Argument(help="The schedule's id (or a unique prefix of it).")]


@app.command("add")
def add_command(
    graph: Annotated[str, typer.Argument(help="A graph file, or the id/slug of a stored graph.")],
    cron: Annotated[str, typer.Option("--cron", help="When: five cron fields, e.g. '*/5 * * * *'.")],
    inputs: Annotated[list[str], typer.Option("-i", "--input", help="Run input as key=value (repeatable).")] = [],  # noqa: B006
    input_file: Annotated[Path | None, typer.Option("--input-file", help="The run input (JSON or YAML).")] = None,
    catch_up: Annotated[
        str, typer.Option("--catch-up", help="Firings missed while no scheduler ran: none | one | all.")
    ] = "one",
    timezone: Annotated[str, typer.Option("--timezone", help="The cron's time zone (IANA name).")] = "UTC",
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Run GRAPH at the instants --cron names (the schedule is stored: it survives restarts)."""
    from plait.runs.schedules import CATCH_UP, add_schedule

    if catch_up not in CATCH_UP:
        fail(f"--catch-up '{catch_up}' is not one of {', '.join(CATCH_UP)}")
    run_input = parse_inputs(inputs, input_file)
    with store_for(db) as store:
        made = add_schedule(store, graph, cron, run_input, catch_up=catch_up, timezone=timezone)
    if json_output:
        print_json(made.as_json())
        return
    first = when_in(made.next_fire_at, made.timezone)
    sys.stderr.write(f"schedule {made.id} added: first firing {first}; it fires while "
                     "`plait serve` or `plait worker --beat` runs\n")  # fmt: skip
    sys.stdout.write(f"{made.id}\n")


@app.command("list")
def list_command(db: DbOption = None, json_output: JsonOption = False) -> None:
    """Every schedule: its graph, cron, status, next and last firing."""
    from rich.table import Table

    with store_for(db) as store:
        schedules = store.schedules.list()
        names = {s.graph_id: _graph_name(store, s.graph_id) for s in schedules}
        if not schedules and not json_output:
            sys.stderr.write(f"no schedules in {store_named(store, db)}\n")
            return
    if json_output:
        print_json([s.as_json() for s in schedules])
        return
    table = Table("id", "graph", "cron", "status", "next", "last run")
    for s in schedules:
        table.add_row(s.id[:8], names[s.graph_id], f"{s.cron} ({s.timezone})", s.status,
                      when_in(s.next_fire_at, s.timezone) if s.status == "active" else "",
                      s.last_run_id or "")  # fmt: skip
    print_table(table)


@app.command("show")
def show_command(schedule_id: IdArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """One schedule and its newest firings with their runs."""
    from plait.runs.schedules import show

    with store_for(db) as store:
        shown = show(store, schedule_id)
    if json_output:
        print_json(shown.as_json())
        return
    found, out = shown.schedule, console()
    out.print(f"schedule {found.id}: {found.cron} ({found.timezone}), {found.status}, catch-up {found.catch_up}")
    out.print(f"next firing: {when_in(found.next_fire_at, found.timezone)}")
    for at, run_id in shown.firings:
        out.print(f"  {when_in(at, found.timezone)}  run {run_id}")


@app.command("pause")
def pause_command(schedule_id: IdArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """Stop firing (nothing is caught up when it resumes)."""
    from plait.runs.schedules import pause

    with store_for(db) as store:
        _done(pause(store, schedule_id), "paused", json_output)


@app.command("resume")
def resume_command(schedule_id: IdArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """Fire again, from the next instant on."""
    from plait.runs.schedules import resume

    with store_for(db) as store:
        _done(resume(store, schedule_id), "resumed", json_output)


@app.command("delete")
def delete_command(schedule_id: IdArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """Delete a schedule (its past runs stay)."""
    with store_for(db) as store:
        _done(store.schedules.delete(schedule_id), "deleted", json_output)


def _done(schedule: Any, what: str, json_output: bool) -> None:
    if json_output:
        print_json(schedule.as_json())
    else:
        sys.stderr.write(f"schedule {schedule.id} {what}\n")


def _graph_name(store: Any, graph_id: str) -> str:
    try:
        return str(store.graphs.get(graph_id).graph.id)
    except KeyError:
        return graph_id
