"""`plait graphs …` commands. `show` works on files today; stored ids arrive with the store."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Inspect graph definitions.", no_args_is_help=True)


@app.command("show")
def show(
    graph: Annotated[str, typer.Argument(help="A graph file (.yaml/.yml/.json).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the structure as JSON.")] = False,
) -> None:
    """Print a graph as levels from its entry nodes to its exits, with schema ids on edges."""
    from plait.cli.render import graph_json, render_graph
    from plait.compile import compile_file

    path = Path(graph)
    if not path.is_file():
        sys.stderr.write(f"plait: no such graph file: {graph}\n  hint: give the path of a .yaml/.yml/.json file\n")
        raise typer.Exit(2)
    result = compile_file(path)
    if not result.valid or result.expanded is None or result.topology is None:
        for diag in result.errors:
            sys.stderr.write(diag.format() + "\n")
        sys.stderr.write(f"plait: {graph} is not a valid graph; run `plait validate {graph}`\n")
        raise typer.Exit(2)
    if json_output:
        sys.stdout.write(json.dumps(graph_json(result.expanded, result.topology), indent=2, ensure_ascii=False) + "\n")
    else:
        render_graph(result.expanded, result.topology)
