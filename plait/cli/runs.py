"""`plait runs list|show|diff`: what ran, how it went, every node's record, and how two runs differ."""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

import typer

from plait.cli.common import DbOption, JsonOption, console, fail, open_store, print_json
from plait.cli.run_diff import diff_command

app = typer.Typer(help="Inspect runs.", no_args_is_help=True)


def _when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else ""


@app.command("list")
def list_runs(
    graph: Annotated[str | None, typer.Option("--graph", help="Only runs of this graph (id or slug).")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Only runs with this status.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first.")] = 50,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """List runs, newest first."""
    store = open_store(db)
    try:
        runs = store.runs.list(graph=graph, status=status, limit=limit)
    finally:
        store.close()
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
            r.graph_slug,
            str(r.graph_def_ver),
            r.status,
            _when(r.created_at),
            str(r.tokens_input + r.tokens_output),
            f"{r.cost_usd:.4f}",
        )
    console().print(table)


@app.command("show")
def show_run(
    run_id: Annotated[str, typer.Argument(help="The run id.")],
    db: DbOption = None,
    json_output: JsonOption = False,
    ledger: Annotated[
        bool, typer.Option("--ledger", help="Also the field ledger: every version of every value, who read it.")
    ] = False,
    raw: Annotated[
        bool, typer.Option("--raw", help="Outputs as stored, without migrating older schema versions.")
    ] = False,
) -> None:
    """One run: status, input, output, and per node status, attempts, tokens, cost, timings, effective output
    (read at the graph's current schema versions, migrating older outputs; --raw: as stored)."""
    from plait.store import StoreError

    store = open_store(db)
    try:
        try:
            run = store.runs.get(run_id)
        except StoreError as exc:
            fail(str(exc), "list runs with `plait runs list`")
        nodes = store.runs.node_runs(run_id)
        versions = store.ledger.history(run_id) if ledger else []
        latest = store.graphs.get(run.def_id).version
        outputs, migrated = _outputs(store, run, nodes, raw)
    finally:
        store.close()
    if json_output:
        shown = {
            **run.summary(),
            "graph_latest_version": latest,
            "input": run.input,
            "output": run.output,
            "error": run.error,
            "nodes": [
                {
                    **n.summary(),
                    "effective_output": outputs[n.id],
                    "input_snapshot": n.input_snapshot,
                    **migrated.get(n.id, {}),
                }
                for n in nodes
            ],
        }
        if ledger:
            from plait.engine.ledger import ledger_json

            shown["ledger"] = ledger_json(versions, nodes)
        print_json(shown)
        return
    _render(run, nodes, outputs, latest)
    for n in nodes:
        if n.id in migrated:
            console().print(f"[dim]{n.node_id}: read migrated, {migrated[n.id]['migrated']} (--raw: as stored)[/]")
    if ledger:
        _render_ledger(versions, nodes)


def _outputs(store: Any, run: Any, nodes: list[Any], raw: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Effective outputs by node run id, migrated to today's schemas unless `raw`; and what was migrated."""
    from plait.evolve.migrate import MigrationError
    from plait.evolve.read import read_outputs

    try:
        outputs = read_outputs(store, run, nodes, raw=raw)
    except MigrationError as exc:
        fail(exc.message, exc.hint or "`plait runs show RUN_ID --raw` shows the stored originals")
    return outputs.values, {rid: {"migrated": steps} for rid, steps in outputs.migrated.items()}


def _served(attempts: list[dict[str, Any]]) -> str:
    """Who answered the last attempt, and what the provider pool did on the way (all attempts)."""
    if not attempts:
        return ""
    last = attempts[-1]
    if last.get("cache_hit"):
        return "cache"
    where = "/".join(str(x) for x in (last.get("provider"), last.get("model")) if x)
    events = [d.get("event") for a in attempts for d in a.get("decisions", [])]
    notes = [f"{e}×{events.count(e)}" for e in ("queued", "retry", "failover", "degraded") if e in events]
    return where + (f" ({', '.join(notes)})" if notes else "")


def _render(run: Any, nodes: list[Any], outputs: dict[str, Any], latest: int) -> None:
    from rich.table import Table

    out = console()
    based = f"based on v{run.graph_def_ver}" + (f", latest is v{latest}" if latest != run.graph_def_ver else "")
    out.print(f"[bold]run {run.id}[/]  graph {run.graph_slug} ({based})  status [bold]{run.status}[/]")
    out.print(
        f"created {_when(run.created_at)}  tokens {run.tokens_input}+{run.tokens_output}  cost ${run.cost_usd:.4f}"
    )
    table = Table()
    for column in ("node", "status", "attempts", "served by", "tokens", "cost $", "time"):
        table.add_column(column, no_wrap=True)
    table.add_column("effective output (full: --json)", no_wrap=True, overflow="ellipsis", max_width=60)
    newest: dict[str, int] = {}
    for n in nodes:
        newest[n.node_id] = max(newest.get(n.node_id, 0), n.activation)
    for n in nodes:
        took = f"{n.completed_at - n.started_at:.2f}s" if n.completed_at and n.started_at else ""
        output = json.dumps(outputs[n.id], ensure_ascii=False) if outputs[n.id] is not None else ""
        if n.error:
            output = f"[red]{n.error.get('message', '')}[/]"
        label = n.node_id if n.activation == 1 else f"{n.node_id} #{n.activation}"
        status = str(n.status)
        if newest[n.node_id] != n.activation:
            label, status = f"[dim]{label}[/]", f"[dim]{status} (history)[/]"
        elif n.status == "stale":
            status = "[yellow]stale ⚠[/]"
        table.add_row(
            label,
            status,
            str(len(n.attempts or [])),
            _served(n.attempts or []),
            f"{n.tokens_input}+{n.tokens_output}",
            f"{n.cost_usd:.4f}",
            took,
            output[:200].replace("\n", " "),
        )
    out.print(table)
    stale = [n.node_id for n in nodes if n.status == "stale" and newest[n.node_id] == n.activation]
    if stale:
        out.print(
            f"[yellow]stale:[/] {', '.join(stale)} read a value that was corrected since; "
            f"`plait rerun {run.id} {stale[0]}` reruns one (--downstream: what follows it too)"
        )
    if run.error:
        out.print(f"[red]error:[/] {run.error.get('message', run.error)}")
    if run.output is not None:
        out.print("output:", json.dumps(run.output, ensure_ascii=False, indent=2))


def _render_ledger(versions: list[Any], nodes: list[Any]) -> None:
    from rich.table import Table

    table = Table(title="field ledger")
    for column in ("value", "v", "kind", "frozen fields", "by", "at", "read by", "reason"):
        table.add_column(column, no_wrap=column != "reason")
    for v in versions:
        readers = [
            n.node_id if n.activation == 1 else f"{n.node_id} #{n.activation}"
            for n in nodes
            if (n.consumed or {}).get(v.owner_id) == v.version
        ]
        frozen = ", ".join(f"{name} ({entry.get('by')})" for name, entry in v.frozen.items())
        table.add_row(v.owner_id, str(v.version), v.kind, frozen, v.by, _when(v.at), ", ".join(readers), v.reason or "")
    console().print(table)


app.command("diff")(diff_command)
