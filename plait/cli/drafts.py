"""`plait graphs drafts`: the edits the workbench keeps on the server before they are a version.

A person who left a graph half-built in the browser finds it here: listed, shown as the YAML a
file would hold (with what is still wrong with it), or discarded. Storing one is `plait graphs
import` of that YAML, with every check.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer

from plait.cli.common import print_json, print_table, store_for, store_named, when
from plait.cli.options import DbOption, JsonOption

if TYPE_CHECKING:
    from plait.evolve.drafts import DraftListing


def drafts_command(
    graph: Annotated[str | None, typer.Argument(help="Show (or discard) the draft of this graph id.")] = None,
    discard: Annotated[bool, typer.Option("--discard", help="Forget the draft of GRAPH (its edits are lost).")] = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Graphs' edits kept as drafts (valid or not): list them, show one as YAML with its problems, or discard it."""
    from plait.evolve.drafts import drop_draft, list_drafts, read_draft

    if discard and graph is None:
        raise typer.BadParameter("--discard needs the GRAPH whose draft to forget")
    with store_for(db, "`plait graphs drafts` lists the graphs that have one") as store:
        if graph is None:
            listed = list_drafts(store)
            named = store_named(store, db)
        elif discard:
            drop_draft(store, graph)
            sys.stderr.write(f"discarded the draft of {graph}\n")
            return
        else:
            draft = read_draft(store, graph)
    if graph is None:
        _list(listed, named, json_output)
        return
    if json_output:
        problems = draft.check.to_json()
        record = draft.record
        print_json({"slug": record.slug, "base_version": record.base_version, "saved_at": record.saved_at,
                    "latest_version": draft.latest_version, "graph": record.document, **problems})  # fmt: skip
        return
    import yaml

    sys.stdout.write(yaml.safe_dump(draft.record.document, sort_keys=False, allow_unicode=True))
    start = f"version {draft.record.base_version}" if draft.record.base_version else "no version: a new graph"
    sys.stderr.write(f"draft of {graph}, made on {start}, kept {when(draft.record.saved_at)}\n")
    for diagnostic in [*draft.check.errors, *draft.check.warnings]:  # as `plait validate` prints them
        sys.stderr.write(diagnostic.format() + "\n")
    if not draft.check.errors:
        sys.stderr.write("  valid: store it with `plait graphs import FILE` (this YAML)\n")


def _list(listed: list[DraftListing], named: str, json_output: bool) -> None:
    if json_output:
        print_json([asdict(d) for d in listed])
        return
    if not listed:
        sys.stderr.write(f"no drafts in {named}\n")
        return
    from rich.table import Table

    table = Table("graph", "name", "nodes", "made on", "kept")
    for d in listed:
        made_on = f"version {d.base_version}" if d.base_version else "new graph"
        table.add_row(d.slug, d.name or "", str(d.nodes), made_on, when(d.saved_at))
    print_table(table)
