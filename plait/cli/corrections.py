"""`plait override | rerun | review | rollback`: a person's corrections to a run.

A refused correction (unknown run or node, a value that breaks a schema, a frozen field)
exits 2 with the reason and changes nothing. A correction that leaves work to execute (a
RERUN policy, a rerun, an answered review) drives the run at once, like `plait resume`,
and exits with the run's code (0 done, 1 failed, 3 paused again).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import fail, read_file_option, refuse, resolve_run, store_for
from plait.cli.options import (
    DbOption,
    Driving,
    drives_a_run,
)
from plait.cli.told import downstream_report, overridden, rolled_back, tell

FileOption = Annotated[Path | None, typer.Option("--file", help="The corrected value: a JSON or YAML file.")]
ValueOption = Annotated[str | None, typer.Option("--value", help="The corrected value as inline JSON.")]
RunArg = Annotated[str, typer.Argument(help="The run (its id, or a unique prefix of it).")]


@drives_a_run
def override_command(
    run_id: RunArg,
    node_id: Annotated[str, typer.Argument(help="The node whose output to correct.")],
    file: FileOption = None,
    value: ValueOption = None,
    policy: Annotated[
        str, typer.Option("--policy", help="Downstream: KEEP | INVALIDATE (mark stale) | RERUN | RERUN_ALL.")
    ] = "INVALIDATE",
    note: Annotated[str | None, typer.Option("--note", help="Why (kept with the override).")] = None,
    db: DbOption = None,
    *,
    how: Driving,
) -> None:
    """Correct a node's output: the model's original is kept, the correction is what everything reads.
    On a node its repair hook escalated to a person, the value is the node's output (as `plait review`)."""
    from plait.model.enums import DownstreamPolicy
    from plait.runs.escalations import override

    chosen = policy.upper()
    if chosen not in DownstreamPolicy.__members__:
        fail(f"unknown policy '{policy}'", "use KEEP, INVALIDATE, RERUN or RERUN_ALL")
    corrected = _value(file, value)
    said = partial(overridden, node_id=node_id, policy=chosen)
    _correct(
        db,
        run_id,
        lambda c, run: override(c, run, node_id, corrected, policy=DownstreamPolicy(chosen), note=note),
        how,
        by="override",
        said=said,
    )


@drives_a_run
def rerun_command(
    run_id: RunArg,
    node_id: Annotated[str, typer.Argument(help="The node to run again (a new activation; the old one is kept).")],
    downstream: Annotated[bool, typer.Option("--downstream", help="Rerun everything after it too.")] = False,
    db: DbOption = None,
    *,
    how: Driving,
) -> None:
    """Run a node again (e.g. a stale one); without --downstream its direct downstream becomes stale.
    The node is asked afresh, not answered from the response cache (--cache allows it); the nodes
    after it still use the cache whenever their input is unchanged (--no-cache: nothing does)."""
    _correct(
        db,
        run_id,
        lambda c, run: c.rerun(run, node_id, downstream=downstream, fresh=how.cache_given is not True),
        how,
        by="rerun",
    )


@drives_a_run
def review_command(
    run_id: Annotated[str, typer.Argument(help="The paused run (its id, or a unique prefix of it).")],
    node_id: Annotated[str, typer.Argument(help="The HUMAN_REVIEW node waiting for you.")],
    approve: Annotated[bool, typer.Option("--approve", help="Accept the value under review as it is.")] = False,
    file: FileOption = None,
    value: ValueOption = None,
    note: Annotated[str | None, typer.Option("--note", help="Why (kept with the answer).")] = None,
    db: DbOption = None,
    *,
    how: Driving,
) -> None:
    """Answer a HUMAN_REVIEW (approve, or give a corrected value) and continue the run."""
    if approve == (file is not None or value is not None):
        fail("give either --approve or a corrected value (--file F or --value JSON)")
    corrected = None if approve else _value(file, value)
    _correct(db, run_id, lambda c, run: c.review(run, node_id, corrected, approve=approve, note=note), how, by="review")


@drives_a_run
def rollback_command(
    run_id: RunArg,
    target: Annotated[str, typer.Argument(help="NODE_ID, NODE_ID.FIELD, input or input.FIELD.")],
    to_version: Annotated[int, typer.Option("--to-version", help="The ledger version to restore.")],
    cascade: Annotated[
        bool,
        typer.Option(
            "--cascade",
            help="Run again what was built from the replaced value, and everything after it, instead of "
            "marking it stale (the response cache answers a node whose input is back to an earlier one).",
        ),
    ] = False,
    db: DbOption = None,
    *,
    how: Driving,
) -> None:
    """Restore a value (or one field) and its frozen state to an earlier version; its newer readers become
    stale (with --cascade: they run again)."""
    owner, _, field_name = target.partition(".")
    said = partial(rolled_back, target=target, to_version=to_version)
    rollback = partial(_rollback, owner=owner, field_name=field_name or None, to_version=to_version, cascade=cascade)
    _correct(db, run_id, rollback, how, said=said)


def _rollback(c: Any, run: str, *, owner: str, field_name: str | None, to_version: int, cascade: bool) -> Any:
    return c.rollback(run, owner, field_name, to_version, cascade=cascade)


def _value(file: Path | None, value: str | None) -> Any:
    """The corrected value from --file or --value, under the limits of every stored value."""
    from plait.model.documents import DocumentError, check_document, parse_json

    if (file is None) == (value is None):
        fail("give the corrected value with --file F or --value JSON (one of them)")
    if file is not None:
        return read_file_option(file, "--file", "value")
    assert value is not None
    try:
        parsed = parse_json(value, "--value")
        check_document(parsed, "--value", "value")
    except DocumentError as exc:
        if exc.code == "syntax":
            fail(exc.message, 'quote it for the shell: --value \'{"text": "..."}\'')
        fail(exc.message, exc.hint)
    return parsed


def _correct(
    db: str | None, run_ref: str, apply: Any, how: Driving, *, by: str = "correction", said: Any = None
) -> None:
    """Make the correction; when it left work, execute the run on its own model (or the one
    --llm/--config names, recorded on the run as `by`), the response cache off with --no-cache.
    `said(store, result)`: the facts to print of a correction that changed a value."""
    from plait.cli.drive import execute, run_provider, session_for
    from plait.runs.corrections import CorrectionError, Corrections

    with store_for(db) as store:
        try:
            result = apply(Corrections(store), resolve_run(store, run_ref))
        except CorrectionError as exc:
            refuse(exc)
        facts = said(store, result) if said is not None else {}
        driven_json = how.json_output and result.needs_run  # the run's summary is the one document printed
        tell(facts, result, how.json_output and not result.needs_run, how.quiet, show_value=not driven_json)
        if result.needs_run:
            provider = run_provider(store, result.run_id, how.llm, how.config, by=by)
            with downstream_report(store, result, how.quiet):
                execute(session_for(store, provider, how), result.run_id, how, show_output=not facts)
        parent = result.parent
        while parent is not None:  # the parent node took the child's new output with a RERUN policy
            if parent.needs_run:
                provider = run_provider(store, parent.run_id, how.llm, how.config, by=by)
                execute(session_for(store, provider, how), parent.run_id, how, show_output=False)
            parent = parent.parent
