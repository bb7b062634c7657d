"""`plait runs cancel | delete`, and the lines of `runs show` that say which model a run executes
on, how long it executed and when people corrected it (kept apart: a person's time is not the
run's execution time)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from plait.cli.common import fail, print_json, resolve_run, store_for, when
from plait.cli.options import DbOption, JsonOption

if TYPE_CHECKING:
    from plait.store import Store

T = TypeVar("T")
Hint = Callable[[str], str]
RunArg = Annotated[str, typer.Argument(help="The run id (or a unique prefix of it).")]
ForceOption = Annotated[
    bool, typer.Option("--force", help="Delete a run that has ended (completed, failed, cancelled).")
]


def cancel_command(run_id: RunArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """Stop a pending, paused or interrupted run for good (`cancelled`; it cannot be resumed)."""
    run_id, before = _administer(
        db,
        run_id,
        lambda store, run: store.run_admin.cancel(run),
        ended=lambda run: f"to remove it, `plait runs delete {run} --force`",
        in_use=lambda run: "stop it where it executes (Ctrl-C, or POST /api/runs/{id}/cancel on its server)",
    )
    if json_output:
        print_json({"run_id": run_id, "status": "cancelled", "was": before})
    else:
        sys.stderr.write(f"run {run_id} cancelled (it was {before})\n")


def delete_command(
    run_id: RunArg,
    force: ForceOption = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Delete a run with its node runs, its ledger versions and the cached answers it produced."""
    run_id, gone = _administer(
        db,
        run_id,
        lambda store, run: store.run_admin.delete(run, force=force),
        ended=lambda run: f"pass --force to delete it anyway: `plait runs delete {run} --force`",
        in_use=lambda run: f"cancel it where it executes, or wait for it to end; then `plait runs delete {run}`",
    )
    if json_output:
        print_json({"run_id": gone.run_id, "deleted": True, **asdict(gone)})
    else:
        sys.stderr.write(
            f"run {run_id} deleted ({gone.status}): {gone.node_runs} node runs, "
            f"{gone.ledger_versions} ledger versions, {gone.cache_entries} cached answers\n"
        )


def _administer(
    db: str | None, run_ref: str, act: Callable[[Store, str], T], *, ended: Hint, in_use: Hint
) -> tuple[str, T]:
    """The run's full id and what `act` returned. The store refuses in neutral words (a run that
    has ended, one a live process holds); the hints, given the run's id, say what to type."""
    from plait.store.run_admin import RunEnded, RunInUse

    with store_for(db, "list runs with `plait runs list`") as store:
        run_id = resolve_run(store, run_ref)
        try:
            return run_id, act(store, run_id)
        except RunEnded as exc:
            fail(str(exc), ended(run_id))
        except RunInUse as exc:
            fail(str(exc), in_use(run_id))


def model_lines(run: Any, nodes: list[Any]) -> list[str]:
    """The run's model (and each change of it), its execution time, and its corrections' times."""
    from plait.runs.model_choice import label

    lines = [f"model {label(run.llm)}  executed {run.active_s:.2f}s"]
    for change in run.llm_history:
        lines.append(
            f"  model changed {when(change.get('at'))} by {change.get('by')}: "
            f"{label(change.get('from'))} -> {label(change.get('to'))}"
        )
    corrected = [n for n in nodes if n.override_at is not None]
    for n in corrected:
        name = n.node_id if n.activation == 1 else f"{n.node_id} #{n.activation}"
        lines.append(f"  corrected {when(n.override_at)}: {name} by {n.override_by} ({n.override_note or 'no note'})")
    return lines
