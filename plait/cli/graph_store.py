"""`plait graphs versions | import | export | delete`: stored graphs and their immutable versions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import fail, print_json, print_table, store_for, when
from plait.cli.options import DbOption, JsonOption

GraphRef = Annotated[str, typer.Argument(help="A stored graph's id or slug.")]


def versions_command(ref: GraphRef, db: DbOption = None, json_output: JsonOption = False) -> None:
    """Every version of a graph: number, schema version, when, how many runs pinned it; the
    promoted one (what runs by default) is marked."""
    with store_for(db) as store:
        stored = store.graphs.get(ref)
        rows = store.graph_admin.versions(stored.graph_id)
        promoted = store.evaluations.promoted_version(stored.graph_id)
    if json_output:
        print_json(
            [
                {
                    "version": v.version,
                    "schema_version": v.schema_version,
                    "created_at": v.created_at,
                    "runs": v.runs,
                    "promoted": v.version == promoted,
                }
                for v in rows
            ]
        )
        return
    from rich.table import Table

    table = Table(title=f"{stored.slug} ({stored.source_type})")
    for column in ("version", "schema", "saved", "runs"):
        table.add_column(column, no_wrap=True)
    for v in rows:
        flags = (("latest", v.version == stored.latest_version), ("promoted", v.version == promoted))
        marks = [mark for mark, on in flags if on]
        shown = f"{v.version} ({', '.join(marks)})" if marks else str(v.version)
        table.add_row(shown, v.schema_version, when(v.created_at), str(v.runs))
    print_table(table)


def import_command(
    file: Annotated[Path, typer.Argument(help="A graph file (.yaml/.yml/.json).")],
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Store a graph file: a new graph, or a new version of the graph with its id (never a duplicate)."""
    from plait.compile import GraphInvalid
    from plait.evolve.files import save_file

    if not file.is_file():
        fail(f"no such graph file: {file}")
    with store_for(db) as store:
        try:
            saved = save_file(store, file)
        except GraphInvalid as exc:
            for diag in exc.diagnostics:
                sys.stderr.write(diag.format() + "\n")
            fail(f"{file} is not a valid graph: nothing stored", f"run `plait validate {file}`")
    if saved.stored.created:
        for line in saved.change.report():
            sys.stderr.write(line + "\n")
        for line in raised_versions(saved.change, file):
            sys.stderr.write(f"note: {line}\n")
    for warning in saved.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if saved.saved.left_behind:
        sys.stderr.write(
            f"  add the migration to {file} and run `plait graphs import {file}` again: reading those runs "
            "then migrates their outputs\n"
        )
    report_saved(saved.stored, json_output, saved.change, saved.saved)


def raised_versions(change: Any, file: Path) -> list[str]:
    """Where the store gave a schema a higher version than the file wrote: the store's is the
    schema's version from now on (a migration may target it), and the file may be brought in line."""
    return [
        f"schema '{e.schema_id}' is stored as {e.new_version} while {file} says {e.declared_version}: "
        f"{e.new_version} is its version from now on, and a migration may target it "
        f"(write `version: {e.new_version}` in the file to keep both alike)"
        for e in change.changed
        if e.declared_version is not None and e.new_version is not None and e.declared_version != e.new_version
    ]


def report_saved(stored: Any, json_output: bool, change: Any = None, saved: Any = None) -> None:
    """What a command that stores a graph version says: its id, slug and versions (with --json,
    the schema changes and warnings of an import too, and the stored outputs it left without a
    migration), or on stderr that nothing changed."""
    facts: dict[str, Any] = {
        "id": stored.graph_id,
        "slug": stored.slug,
        "name": stored.graph.name,
        "version": stored.version,
        "schema_version": stored.schema_version,
        "created": stored.created,
    }
    if change is not None:
        facts["schema_changes"] = [
            {
                "schema_id": e.schema_id,
                "status": str(e.status),
                "level": str(e.level),
                "from": e.old_version,
                "to": e.new_version,
                "declared": e.declared_version,
                "findings": [str(f) for f in e.findings],
            }
            for e in change.changed
        ]
        facts["warnings"] = saved.warnings if saved is not None else change.warnings
        facts["left_behind"] = [lb.as_json() for lb in saved.left_behind] if saved is not None else []
    if json_output:
        print_json(facts)
    elif stored.created:
        named = f" ({stored.graph.name})" if stored.graph.name and stored.graph.name != stored.slug else ""
        sys.stderr.write(f"stored {stored.slug}{named} version {stored.version} (schema {stored.schema_version})\n")
    else:
        sys.stderr.write(f"{stored.slug} is unchanged: still version {stored.version}\n")


def export_command(
    ref: GraphRef,
    version: Annotated[int | None, typer.Option("--version", help="A stored version (default: latest).")] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to FILE instead of stdout.")] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """One YAML file (JSON with --json) that `plait graphs import` reads back as the same graph."""
    import json

    from plait.compile.dump import dump_yaml, graph_to_data

    with store_for(db) as store:
        stored = store.graphs.get(ref, version)
    text = (
        json.dumps(graph_to_data(stored.graph), indent=2, ensure_ascii=False) + "\n"
        if json_output
        else dump_yaml(stored.graph)
    )
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
        sys.stderr.write(f"wrote {stored.slug} version {stored.version} to {output}\n")


def delete_command(
    ref: GraphRef,
    force: Annotated[bool, typer.Option("--force", help="Delete a graph that has runs (they stay readable).")] = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Delete a graph (not a system graph); its runs keep the versions they pinned."""
    with store_for(db) as store:
        stored = store.graphs.live(ref)
        kept = store.graph_admin.delete(stored.graph_id, stored.slug, stored.source_type, force=force)
    if json_output:
        print_json({"id": stored.graph_id, "slug": stored.slug, "deleted": True, "runs_kept": kept})
    else:
        sys.stderr.write(f"deleted {stored.slug}" + (f"; its {kept} runs stay readable\n" if kept else "\n"))
