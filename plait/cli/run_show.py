"""`plait runs show RUN`: one run's input, its nodes (with their node run ids, for `plait replay`),
and below the table what the run needs next: the failing node's error and hint in full, or the
review waiting for a person and the commands that answer it."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from plait.cli.common import console, print_json, print_table, resolve_run, store_for, when
from plait.cli.options import DbOption, JsonOption

_CELL_CHARS = 200
"""An effective output longer than this is cut in the table (`--json` has it whole)."""

LedgerOption = Annotated[
    bool, typer.Option("--ledger", help="Also the field ledger: every version of every value, who read it.")
]
RawOption = Annotated[bool, typer.Option("--raw", help="Outputs as stored, without migrating older schema versions.")]


def show_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN_ID", help="The run id (or a unique prefix of it).")],
    db: DbOption = None,
    json_output: JsonOption = False,
    ledger: LedgerOption = False,
    raw: RawOption = False,
) -> None:
    """One run: status, input, output, and per node status, attempts, tokens, cost, timings, effective output
    (read at the graph's current schema versions, migrating older outputs; one no migration brings forward
    is shown as stored, marked outdated; --raw: as stored)."""
    with store_for(db) as store:
        run_id = resolve_run(store, run_ref)
        view = _read(store, run_id, raw)
        versions = store.ledger.history(run_id) if ledger else []
        decisions = store.decisions.of_run(run_id)
    run, nodes, latest = view.run, view.nodes, view.latest_version
    outputs = view.outputs.values
    migrated = {rid: {"migrated": steps} for rid, steps in view.outputs.migrated.items()}
    if json_output:
        read_as = migrated | {rid: {"outdated": notice.as_json()} for rid, notice in view.outputs.outdated.items()}
        shown = _as_json(run, nodes, outputs, read_as, latest, versions if ledger else None)
        print_json({**shown, "decisions": [d.as_json() for d in decisions]})
        return
    out = console()
    _render(out, run, nodes, outputs, latest)
    for d in decisions:  # resource-aware decisions on the run or one of its nodes: queued, paused, degraded...
        on = "" if d.node_id is None else f" node '{d.node_id}'"
        out.print(
            f"[yellow]resources:[/] {when(d.at)}{on} {d.action} ({d.rule}): {d.reason}", soft_wrap=True, highlight=False
        )
    for n in nodes:
        if n.id in migrated:
            out.print(f"[dim]{n.node_id}: read migrated, {migrated[n.id]['migrated']} (--raw: as stored)[/]")
    _outdated_lines(out, run.id, nodes, view.outputs.outdated)
    if ledger:
        _render_ledger(out, versions, nodes)


def _as_json(
    run: Any, nodes: list[Any], outputs: dict[str, Any], migrated: dict[str, Any], latest: int, versions: Any
) -> dict[str, Any]:
    from plait.runs.stopped import waiting_reviews, with_cause

    shown = {
        **run.summary(),
        "graph_latest_version": latest,
        "input": run.input,
        "output": run.output,
        "error": with_cause(run.id, run.error, nodes),
        "waiting": waiting_reviews(run.id, nodes) if run.status == "paused" else [],
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
    if versions is not None:
        from plait.engine.ledger import ledger_json

        shown["ledger"] = ledger_json(versions, nodes)
    return shown


def _read(store: Any, run_id: str, raw: bool) -> Any:
    """The run with its outputs migrated to today's schemas unless `raw`; an output no migration
    brings forward comes as stored, with a notice (`_outdated_lines`)."""
    from plait.runs.read import read_run

    return read_run(store, run_id, raw=raw)


def _outdated_lines(out: Any, run_id: str, nodes: list[Any], notices: dict[str, Any]) -> None:
    """Per output shown as stored because its schema moved on: which schema and versions, why,
    and the migration that would bring it forward."""
    from rich.markup import escape

    for n in nodes:
        notice = notices.get(n.id)
        if notice is None:
            continue
        label = n.node_id if n.activation == 1 else f"{n.node_id} #{n.activation}"
        out.print(f"[yellow]outdated:[/] {escape(label)}: {escape(notice.summary())}", soft_wrap=True, highlight=False)
        if notice.reason != "no_migration":
            out.print(f"  why: {escape(notice.problem)}", soft_wrap=True, highlight=False)
        out.print(f"  to bring it forward: {escape(notice.fix)}", soft_wrap=True, highlight=False)
    if notices:
        out.print(
            "  after editing the graph file, `plait graphs import FILE` stores it; "
            f"`plait runs show {run_id} --raw` shows every output as stored",
            soft_wrap=True,
            highlight=False,
        )


def served(attempts: list[dict[str, Any]]) -> str:
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


def _render(out: Any, run: Any, nodes: list[Any], outputs: dict[str, Any], latest: int) -> None:
    from rich.markup import escape

    based = f"based on v{run.graph_version}" + (f", latest is v{latest}" if latest != run.graph_version else "")
    header = f"[bold]run {run.id}[/]  graph {escape(run.graph_slug)} ({based})  status [bold]{run.status}[/]"
    out.print(header, soft_wrap=True)
    out.print(
        f"created {when(run.created_at)}  tokens {run.tokens_input}+{run.tokens_output}  cost ${run.cost_usd:.4f}",
        soft_wrap=True,
    )
    from plait.cli.run_admin import model_lines

    for line in model_lines(run, nodes):  # the model, execution time and correction times
        out.print(escape(line), soft_wrap=True)
    out.print("input:", escape(json.dumps(run.input, ensure_ascii=False)), soft_wrap=True)
    print_table(_node_table(nodes, outputs), out)
    _below_table(out, run, nodes)


def _node_table(nodes: list[Any], outputs: dict[str, Any]) -> Any:
    from rich.markup import escape
    from rich.table import Table

    from plait.model.output_meta import strip_meta_deep
    from plait.store import current_activations as newest

    table = Table()
    for column in ("node", "node run", "status", "attempts", "served by", "tokens", "cost $", "time"):
        table.add_column(column, no_wrap=True)
    table.add_column("effective output (full: --json)", no_wrap=True, overflow="ellipsis", max_width=60)
    current = {n.node_id: n.activation for n in newest(nodes).values()}
    for n in nodes:
        took = f"{n.completed_at - n.started_at:.2f}s" if n.completed_at and n.started_at else ""
        value = strip_meta_deep(outputs[n.id])
        output = escape(json.dumps(value, ensure_ascii=False)[:_CELL_CHARS]) if value is not None else ""
        if n.error and value is None:  # a failed node given its output by a person shows that output
            output = f"[red]{escape(str(n.error.get('message', '')))[:_CELL_CHARS]}[/]"
        label = n.node_id if n.activation == 1 else f"{n.node_id} #{n.activation}"
        status = str(n.status)
        if current[n.node_id] != n.activation:
            label, status = f"[dim]{label}[/]", f"[dim]{status} (history)[/]"
        elif n.status == "stale":
            status = "[yellow]stale ⚠[/]"
        row = [label, n.id, status, str(len(n.attempts or [])), served(n.attempts or [])]
        table.add_row(*row, f"{n.tokens_input}+{n.tokens_output}", f"{n.cost_usd:.4f}", took, output.replace("\n", " "))
    return table


def _below_table(out: Any, run: Any, nodes: list[Any]) -> None:
    """What the table cannot hold: stale nodes, the failure in full, the waiting review, the output."""
    from rich.markup import escape

    from plait.cli.outcome import failure_lines, review_lines
    from plait.runs.stopped import node_failure, waiting_reviews
    from plait.store import current_activations as newest

    stale = [n.node_id for n in newest(nodes).values() if n.status == "stale"]
    if stale:
        out.print(
            f"[yellow]stale:[/] {', '.join(stale)} read a value that was corrected since; "
            f"`plait rerun {run.id} {stale[0]}` reruns one (--downstream: what follows it too)",
            soft_wrap=True,
        )
    if run.error:
        out.print(f"[red]error:[/] {escape(str(run.error.get('message', run.error)))}", soft_wrap=True)
        cause = node_failure(run.id, run.error, nodes)
        for line in failure_lines(cause) if cause else []:
            out.print(escape(line), soft_wrap=True)
    if run.status == "paused":
        for review in waiting_reviews(run.id, nodes):
            for line in review_lines(review):
                out.print(escape(line), soft_wrap=True, highlight=False)
    if run.output is not None:
        out.print("output:", escape(json.dumps(run.output, ensure_ascii=False, indent=2)), soft_wrap=True)


def _render_ledger(out: Any, versions: list[Any], nodes: list[Any]) -> None:
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
        table.add_row(v.owner_id, str(v.version), v.kind, frozen, v.by, when(v.at), ", ".join(readers), v.reason or "")
    print_table(table, out)
