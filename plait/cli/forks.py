"""`plait graphs fork | diff | merge`: forks of graphs, and taking the parent's later changes into them."""

from __future__ import annotations

import difflib
import json
from typing import Annotated, Any

import typer

from plait.cli.common import console, fail, print_json, refuse, store_for
from plait.cli.graph_store import GraphRef, report_saved
from plait.cli.options import DbOption, JsonOption


def fork_command(
    ref: GraphRef,
    name: Annotated[
        str | None, typer.Option("--name", help='The fork\'s display name (free text, e.g. "My fork").')
    ] = None,
    fork_id: Annotated[
        str | None,
        typer.Option("--id", help="The fork's id (default: derived from --name, else <parent>_fork; made unique)."),
    ] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Copy a graph (a system graph too) into an editable fork that remembers its parent."""
    from plait.evolve.fork import fork_graph

    _run(db, lambda store: report_saved(fork_graph(store, ref, fork_id, display_name=name), json_output))


def diff_command(
    ref: GraphRef,
    against: Annotated[
        str, typer.Option("--against", help="`parent` (the parent as forked) or a parent version number.")
    ] = "parent",
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Three-way diff of a fork: the parent as forked, the parent now, the fork now."""
    from plait.evolve.fork import diff_fork

    if against != "parent" and not against.isdigit():
        fail(f"--against takes `parent` or a version number, not '{against}'")
    version = None if against == "parent" else int(against)
    _run(db, lambda store: _show_diff(diff_fork(store, ref, version), json_output))


ConfirmOption = Annotated[bool, typer.Option("--confirm", help="Needed with --refork: the fork's changes are lost.")]


def merge_command(
    ref: GraphRef,
    from_parent: Annotated[
        list[str], typer.Option("--from-parent", help="A node id, or schema:ID / edge:ID / migration:ID (repeatable).")
    ] = [],  # noqa: B006
    refork: Annotated[bool, typer.Option("--refork", help="Replace the fork by the parent's latest.")] = False,
    confirm: ConfirmOption = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Take chosen changes of the parent into the fork (a new fork version), or re-fork."""
    from plait.evolve.fork import merge_from_parent
    from plait.evolve.fork import refork as do_refork

    if refork == bool(from_parent):
        fail("give --from-parent ITEM ... or --refork (not both)")
    if refork and not confirm:
        fail("--refork replaces the fork by its parent and loses the fork's own changes", "add --confirm")
    if refork:
        _run(db, lambda store: report_saved(do_refork(store, ref), json_output))
    else:
        _run(db, lambda store: report_saved(merge_from_parent(store, ref, from_parent), json_output))


def _run(db: str | None, action: Any) -> None:
    """`action(store)`; a refused fork or merge exits 2 with the reason (and its details)."""
    from plait.evolve.fork import ForkError

    with store_for(db) as store:
        try:
            action(store)
        except ForkError as exc:
            refuse(exc)


def _show_diff(diff: Any, json_output: bool) -> None:
    if json_output:
        print_json(diff.to_json())
        return
    out = console()
    moved = "[yellow]parent updated[/]" if diff.parent_moved else "parent unchanged"
    out.print(
        f"[bold]{diff.fork.slug}[/] v{diff.fork.version}: forked from parent v{diff.base_version}, "
        f"parent now v{diff.parent_version} ({moved})"
    )
    if not diff.items:
        out.print("no differences")
    for item in diff.items:
        out.print(f"\n[bold]{item.key}[/]  parent: {item.parent}  fork: {item.fork}")
        for f in item.fields:
            mark = " (CONFLICT: both changed it)" if f.conflict else ""
            if isinstance(f.parent, str) and isinstance(f.base, str) and "\n" in f.base + f.parent:
                lines = difflib.unified_diff(
                    f.base.splitlines(), f.parent.splitlines(), "parent at fork", "parent now", lineterm=""
                )
                out.print(f"  {f.name}{mark}:", markup=False, highlight=False)
                out.print("\n".join(f"    {line}" for line in lines), markup=False, highlight=False)
            elif f.changes():
                out.print(f"  {f.name}{mark}:", markup=False, highlight=False)
                for change in f.changes():
                    sides = " | ".join(f"{_SAID[side]} {_shown(change, side)}" for side in _SAID)
                    out.print(f"    {change['path']}: {sides}", markup=False, highlight=False)
            else:
                sides = " | ".join(f"{_SAID[side]} {_value(getattr(f, side))}" for side in _SAID)
                out.print(f"  {f.name}{mark}: {sides}", markup=False, highlight=False)


_SAID = {"base": "at fork", "parent": "parent", "fork": "fork"}
_VALUE_CHARS = 300
"""A value longer than this is cut in the readable diff (`--json` has it whole)."""


def _shown(change: dict[str, Any], side: str) -> str:
    return _value(change[side]) if side in change else "(absent)"


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 3] + "..."
