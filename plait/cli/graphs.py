"""`plait graphs …` commands: show a graph from a file or from the store, list stored graphs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import STORED_GRAPH_HINT, console, fail, print_json, print_table, store_for, when
from plait.cli.drafts import drafts_command
from plait.cli.forks import diff_command, fork_command, merge_command
from plait.cli.graph_store import delete_command, export_command, import_command, versions_command
from plait.cli.help import PlaitTyper
from plait.cli.options import DbOption, JsonOption
from plait.cli.promote import promote_command

app = PlaitTyper(help="Stored graphs: versions, import/export, forks.", no_args_is_help=True)
app.add_commands(
    {
        "versions": versions_command,
        "import": import_command,
        "export": export_command,
        "delete": delete_command,
        "fork": fork_command,
        "diff": diff_command,
        "merge": merge_command,
        "drafts": drafts_command,
        "promote": promote_command,
    }
)


@app.command("show")
def show(
    graph: Annotated[str, typer.Argument(help="A graph file (.yaml/.yml/.json), or a stored graph's id or slug.")],
    version: Annotated[int | None, typer.Option("--version", help="A stored version (default: latest).")] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Print a graph as levels from its entry nodes to its exits, with schema ids on edges."""
    from plait.cli.render import graph_json, render_graph
    from plait.runs.start import looks_like_file

    if looks_like_file(graph) and not Path(graph).is_file():
        fail(f"no such graph file: {graph}", "give the path of a .yaml/.yml/.json file, or a stored graph id")
    facts: dict[str, Any] | None = None
    if Path(graph).is_file():
        graph_def, topology = _from_file(graph, db)
    else:
        graph_def, topology, facts = _from_store(graph, version, db)
    if json_output:
        print_json(graph_json(graph_def, topology) | ({"stored": facts} if facts else {}))
        return
    if facts is not None:
        out = console()
        for line in (_stored_line(facts), *_promotion_lines(facts)):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    render_graph(graph_def, topology)


def _stored_line(facts: dict[str, Any]) -> str:
    line = (
        f"stored graph {facts['slug']} ({facts['id']}): version {facts['version']} of {facts['latest_version']}, "
        f"schema_version {facts['schema_version']}, source {facts['source_type']}"
    )
    parent = facts["parent"]
    if parent is not None:
        line += f", parent {parent['slug'] or parent['id']} (forked at its version {parent['version_at_fork']})"
    return line


def _promotion_lines(facts: dict[str, Any]) -> list[str]:
    """Which version runs by default, and each promotion that made it so, newest first."""
    promoted = facts["promoted_version"]
    if promoted is None:
        return [f"runs by default: the latest version ({facts['latest_version']}); no version was promoted"]
    lines = [f"runs by default: version {promoted} (promoted; `plait graphs promote` moves it)"]
    for p in facts["promotions"]:
        was = f" (was {p['previous_version']})" if p["previous_version"] is not None else ""
        lines.append(f"  {when(p['promoted_at'])}  version {p['version']}{was} by {p['promoted_by']}, {p['how']}")
    return lines


def _from_file(graph: str, db: str | None) -> tuple[Any, Any]:
    from plait.compile import compile_file
    from plait.evolve.skill_lookup import skill_source_at

    result = compile_file(graph, skills=skill_source_at(db))
    if not result.valid or result.expanded is None or result.topology is None:
        for diag in result.errors:
            sys.stderr.write(diag.format() + "\n")
        fail(f"{graph} is not a valid graph", f"run `plait validate {graph}`")
    return result.expanded, result.topology


def _from_store(ref: str, version: int | None, db: str | None) -> tuple[Any, Any, dict[str, Any]]:
    from plait.engine.state import CompiledRun
    from plait.store import StoreError

    with store_for(db) as store:
        try:
            stored = store.graphs.get(ref, version)
        except StoreError:
            named = f"no graph file or stored graph named '{ref}'" + (f" (version {version})" if version else "")
            fail(named, STORED_GRAPH_HINT)
        facts = _stored_facts(store, stored) | _promotion_facts(store, stored)
    compiled = CompiledRun.from_graph(stored.graph)
    return stored.graph, compiled.topology, facts


def _stored_facts(store: Any, stored: Any) -> dict[str, Any]:
    """What the store knows of a graph beyond its file: version, schema version, source, parent."""
    from plait.store import StoreError

    graph = stored.graph
    parent = None
    if graph.parent_def_id is not None:
        try:
            parent_slug: str | None = store.graphs.get(graph.parent_def_id).slug
        except StoreError:  # the parent was deleted: its id is all there is
            parent_slug = None
        parent = {
            "id": graph.parent_def_id,
            "slug": parent_slug,
            "version_at_fork": graph.parent_def_ver_at_fork,
            "schema_version_at_fork": graph.parent_schema_ver_at_fork,
        }
    return {
        "id": stored.graph_id,
        "slug": stored.slug,
        "name": graph.name,
        "version": stored.version,
        "latest_version": stored.latest_version,
        "schema_version": stored.schema_version,
        "source_type": stored.source_type,
        "parent": parent,
    }


def _promotion_facts(store: Any, stored: Any) -> dict[str, Any]:
    """The graph's promoted version (None: its latest runs) and its promotions, newest first."""
    from plait.runs.promote import promotions

    found = promotions(store, stored.graph_id)
    return {
        "promoted_version": found.promoted_version,
        "promotions": [p.as_json() | {"how": p.describe()} for p in found.history],
    }


@app.command("list")
def list_graphs(
    source_type: Annotated[
        str | None, typer.Option("--source-type", help="Only system, user or system_fork graphs.")
    ] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Stored graphs, latest version of each; forks whose parent has moved on are flagged."""
    from plait.evolve.catalog import list_graphs

    with store_for(db) as store:
        summaries = list_graphs(store, source_type=source_type)
        store_label = store.display_url
    rows: list[dict[str, Any]] = [
        {
            "id": s.listed.graph_id,
            "slug": s.listed.slug,
            "version": s.listed.version,
            "schema_version": s.listed.schema_version,
            "source_type": s.listed.source_type,
            "nodes": s.listed.nodes,
            "updated_at": s.listed.updated_at,
            "parent_id": s.listed.parent_def_id,
            "parent_updated": s.parent_updated,
        }
        for s in summaries
    ]
    if json_output:
        print_json(rows)
        return
    from rich.table import Table

    table = Table(title=f"graphs in {store_label}")
    for column in ("slug", "id", "version", "schema", "type", "nodes", "note"):
        table.add_column(column, no_wrap=True)
    for r in rows:
        note = "parent updated: `plait graphs diff`" if r["parent_updated"] else ""
        table.add_row(
            r["slug"], r["id"], str(r["version"]), r["schema_version"], r["source_type"], str(r["nodes"]), note
        )
    print_table(table)
