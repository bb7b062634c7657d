"""Starting a run: resolve the graph (file or stored), check the input, create the run row."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from plait.api_surface import GraphInvalid
from plait.engine.compiled import save_graph_file
from plait.engine.contracts import schema_violations
from plait.errors import PlaitError, Refusal
from plait.model.graph import SchemaEntry
from plait.model.limits import MAX_DEPTH, value_problem
from plait.store import Store, StoredGraph, StoreError


class StartError(PlaitError):
    """The run cannot start; nothing was executed."""


def looks_like_file(ref: str) -> bool:
    """A graph reference meant as a path (`x.yaml`, `dir/x`) rather than a stored id or slug."""
    return "/" in ref or Path(ref).suffix.lower() in (".yaml", ".yml", ".json")


def resolve_graph(store: Store, ref: str, *, files: bool = True) -> StoredGraph:
    """The stored graph `ref` names; with `files`, a graph file path is validated and stored first.

    The HTTP API passes `files=False`: a client must never make the server read its own files."""
    if files and Path(ref).is_file():
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
    try:
        stored = store.graphs.get(ref)
    except StoreError:
        raise StartError(
            f"no {'graph file or ' if files else ''}stored graph named '{ref}'",
            "give a .yaml/.json path, or a stored graph id or slug (`plait graphs list`)"
            if files
            else "give a stored graph id or slug (GET /api/graphs lists them)",
            kind=Refusal.NOT_FOUND,
        ) from None
    if stored.deleted_at is not None:
        raise StartError(
            f"graph '{ref}' was deleted; its runs stay readable, but no new run starts",
            "store it again (`plait graphs import FILE`, or run the graph file) to run it",
            kind=Refusal.NOT_FOUND,
        )
    return stored


def input_violations(
    schema: dict[str, Any] | None, value: dict[str, Any], registry: Sequence[SchemaEntry] = ()
) -> list[str]:
    return schema_violations(schema, value, registry) if schema else []


def check_input(stored: StoredGraph, run_input: dict[str, Any]) -> None:
    """Refuse a run input that could not be stored and served back (too deep, a lone surrogate,
    NaN), or that does not match the graph's `input_schema` (nothing is created)."""
    problem = value_problem(run_input)
    if problem is not None:
        raise StartError(
            f"the run input cannot be stored: {problem.describe('input')}",
            f"send real characters, finite numbers and at most {MAX_DEPTH} levels of nesting",
            kind=Refusal.INVALID,
        )
    problems = input_violations(stored.graph.input_schema, run_input, stored.graph.schemas)
    if problems:
        raise StartError(
            "the run input does not match the graph's input_schema",
            "pass the missing or corrected fields with -i key=value or --input-file",
            [f"input {p}" for p in problems],
            kind=Refusal.INVALID,
        )


def start_run(
    store: Store,
    ref: str,
    run_input: dict[str, Any],
    *,
    files: bool = True,
    check: Callable[[StoredGraph], None] | None = None,
    llm: dict[str, Any] | None = None,
) -> str:
    """Create a `pending` run of a graph file or stored graph; `Engine.run` executes it.

    `check(stored)` runs after the input check and may refuse before the run row exists (the
    CLI and the HTTP API ask their engine whether it can execute the graph at all: a refused
    run is never created). `llm`: the model selection its executions use
    (`plait.engine.model_choice`)."""
    stored = resolve_graph(store, ref, files=files)
    check_input(stored, run_input)
    if check is not None:
        check(stored)
    return store.runs.add(
        def_id=stored.def_id,
        graph_def_ver=stored.version,
        schema_version=stored.schema_version,
        input=run_input,
        llm=llm,
    )
