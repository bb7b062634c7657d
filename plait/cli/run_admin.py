"""`plait runs cancel | delete`, and the lines of `runs show` that say which model a run executes
on, how long it executed and when people corrected it (kept apart: a person's time is not the
run's execution time)."""

from __future__ import annotations

import datetime as dt
import sys
from typing import Annotated, Any

import typer

from plait.cli.common import DbOption, JsonOption, fail, open_store, print_json, resolve_run

RunArg = Annotated[str, typer.Argument(help="The run id (or a unique prefix of it).")]


def cancel_command(run_id: RunArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """Stop a pending, paused or interrupted run for good (`cancelled`; it cannot be resumed)."""
    from plait.store import NotFoundError
    from plait.store.run_admin import RunEnded, RunInUse

    store = open_store(db)
    try:
        try:
            run_id = resolve_run(store, run_id)
            before = store.run_admin.cancel(run_id)
        except NotFoundError as exc:
            fail(str(exc), "list runs with `plait runs list`")
        except RunEnded as exc:
            fail(str(exc), f"to remove it, `plait runs delete {run_id} --force`")
        except RunInUse as exc:
            fail(str(exc), "stop it where it executes (Ctrl-C, or POST /api/runs/{id}/cancel on its server)")
    finally:
        store.close()
    if json_output:
        print_json({"run_id": run_id, "status": "cancelled", "was": before})
    else:
        sys.stderr.write(f"run {run_id} cancelled (it was {before})\n")


def delete_command(
    run_id: RunArg,
    force: Annotated[
        bool, typer.Option("--force", help="Delete a run that has ended (completed, failed, cancelled).")
    ] = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Delete a run with its node runs, its ledger versions and the cached answers it produced."""
    from plait.store import NotFoundError
    from plait.store.run_admin import RunEnded, RunInUse

    store = open_store(db)
    try:
        try:
            run_id = resolve_run(store, run_id)
            gone = store.run_admin.delete(run_id, force=force)
        except NotFoundError as exc:
            fail(str(exc), "list runs with `plait runs list`")
        except RunEnded as exc:
            fail(str(exc).replace("needs force", "needs --force"), f"`plait runs delete {run_id} --force`")
        except RunInUse as exc:
            fail(str(exc), f"cancel it where it executes, or wait for it to end; then `plait runs delete {run_id}`")
    finally:
        store.close()
    if json_output:
        print_json(
            {
                "run_id": gone.run_id,
                "deleted": True,
                "status": gone.status,
                "node_runs": gone.node_runs,
                "ledger_versions": gone.ledger_versions,
                "cache_entries": gone.cache_entries,
            }
        )
    else:
        sys.stderr.write(
            f"run {run_id} deleted ({gone.status}): {gone.node_runs} node runs, "
            f"{gone.ledger_versions} ledger versions, {gone.cache_entries} cached answers\n"
        )


def _at(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else ""


def model_lines(run: Any, nodes: list[Any]) -> list[str]:
    """The run's model (and each change of it), its execution time, and its corrections' times."""
    from plait.runs.model_choice import label

    lines = [f"model {label(run.llm)}  executed {run.active_s:.2f}s"]
    for change in run.llm_history:
        lines.append(
            f"  model changed {_at(change.get('at'))} by {change.get('by')}: "
            f"{label(change.get('from'))} -> {label(change.get('to'))}"
        )
    corrected = [n for n in nodes if n.override_at is not None]
    for n in corrected:
        name = n.node_id if n.activation == 1 else f"{n.node_id} #{n.activation}"
        lines.append(f"  corrected {_at(n.override_at)}: {name} by {n.override_by} ({n.override_note or 'no note'})")
    return lines
