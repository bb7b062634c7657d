"""Starting a run: resolve the graph (file or stored), check the input, create the run row."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from plait.compile import GraphInvalid
from plait.engine.run_input import GraphResolver, StartError, check_input, stored_graph
from plait.errors import Refusal
from plait.evolve.files import save_graph_file
from plait.store import Store, StoredGraph


def looks_like_file(ref: str) -> bool:
    """A graph reference meant as a path (`x.yaml`, `dir/x`) rather than a stored id or slug."""
    return "/" in ref or Path(ref).suffix.lower() in (".yaml", ".yml", ".json")


def resolve_graph(store: Store, ref: str, *, files: bool = True, version: int | None = None) -> StoredGraph:
    """The stored graph `ref` names, at `version` or else the version it runs by default (its
    promoted version, else its latest: `stored_graph`); with `files`, a graph file path is
    validated and stored first, and runs as it is written.

    The HTTP API passes `files=False`: a client must never make the server read its own files."""
    if files and Path(ref).is_file():
        if version is not None:
            raise StartError(
                f"{ref} is a graph file: --version names a version of a stored graph",
                "run the stored graph by its id or slug with --version, or the file without it",
                kind=Refusal.INVALID,
            )
        try:
            return save_graph_file(store, ref)
        except GraphInvalid as exc:
            raise StartError(
                f"{ref} is not a valid graph ({len(exc.diagnostics)} errors)",
                f"run `plait validate {ref}`",
                [d.format() for d in exc.diagnostics],
                kind=Refusal.INVALID,
            ) from None
    if files and looks_like_file(ref):
        raise StartError(f"no such graph file: {ref}", "check the path", kind=Refusal.NOT_FOUND)
    if not files:
        return stored_graph(
            store, ref, version=version, hint="give a stored graph id or slug (GET /api/graphs lists them)"
        )
    return stored_graph(
        store,
        ref,
        version=version,
        missing="no graph file or stored graph named",
        hint="give a .yaml/.json path, or a stored graph id or slug (`plait graphs list`)",
    )


def local_graphs(store: Store) -> GraphResolver:
    """How the CLI's WORKFLOW_TASK tools find their graph: a stored graph, or a graph file on this machine."""
    return lambda ref: resolve_graph(store, ref, files=True)


def start_run(
    store: Store,
    ref: str,
    run_input: dict[str, Any],
    *,
    files: bool = True,
    check: Callable[[StoredGraph], None] | None = None,
    llm: dict[str, Any] | None = None,
    announce: str | None = None,
    run_id: str | None = None,
    version: int | None = None,
) -> str:
    """Create a `pending` run of a graph file or stored graph; `Engine.run` executes it.

    `check(stored)` runs after the input check and may refuse before the run row exists (the
    CLI and the HTTP API ask their engine whether it can execute the graph at all: a refused
    run is never created). `llm`: the model selection its executions use
    (`plait.runs.model_choice`). `announce`: hand the run to workers (its message is written with
    it, `plait.store.outbox`). `run_id`: the id to give it (one told to the workers before).
    `version`: a stored version to run instead of the one the graph runs by default."""
    stored = resolve_graph(store, ref, files=files, version=version)
    check_input(stored, run_input)
    if check is not None:
        check(stored)
    return store.runs.add(
        graph_id=stored.graph_id,
        graph_version=stored.version,
        schema_version=stored.schema_version,
        input=run_input,
        llm=llm,
        announce=announce,
        run_id=run_id,
    )
