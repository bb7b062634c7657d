"""`plait graphs promote`: make a version of a graph what runs by default, through the gate (an
evaluation set whose newest verdict for that version is pass), or forced with a note.

Exit 0 promoted, 1 refused by the gate (its verdict printed), 2 a request that cannot be made
(no gate and no force, a force without a note, an unknown graph, version or set).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from plait.cli.common import EXIT_FAILED, print_json, refuse, report_refusal, store_for
from plait.cli.options import DbOption, JsonOption

BY = "cli"


def promote_command(
    graph: Annotated[str, typer.Argument(help="A stored graph's id or slug.")],
    version: Annotated[int, typer.Option("--version", min=1, help="The version to promote.")],
    gate: Annotated[
        str | None,
        typer.Option("--gate", metavar="NAME[@REV]", help="The evaluation set whose verdict must be pass."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Promote even though the gate refuses (needs --note; recorded).")
    ] = False,
    note: Annotated[str | None, typer.Option("--note", help="Why (required with --force; kept with it).")] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Make the version --version names what `plait run GRAPH`, schedules, batches and child
    graphs run by default: its newest evaluation on the --gate set must say pass. Exit 1 when the
    gate refuses."""
    from plait.runs.promote import GateRefused, PromotionError, promote, shown

    with store_for(db, "`plait graphs list` lists the stored graphs") as store:
        try:
            made = promote(store, graph, version, gate=gate, force=force, note=note, by=BY)
        except GateRefused as exc:
            report_refusal(exc)
            raise typer.Exit(EXIT_FAILED) from None
        except PromotionError as exc:
            refuse(exc)
        slug = store.graphs.get(made.graph_id).slug
        told = shown(store, made)
    if json_output:
        print_json({"graph_id": made.graph_id, "slug": slug, **told.as_json()})
        return
    was = f" (was {made.previous_version})" if made.previous_version is not None else " (was: its latest)"
    sys.stdout.write(f"promoted {slug} version {made.version}{was}, {told.describe()}\n")
