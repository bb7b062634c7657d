"""What a run starts from: a stored graph that may still run, and an input it accepts.

The checks every way of starting a run shares (a new run, a WORKFLOW_TASK tool's sub-run): a
refused start raises `StartError` before anything is created or executed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from plait.engine.contracts import schema_violations
from plait.errors import PlaitError, Refusal
from plait.model.graph import SchemaEntry
from plait.model.limits import MAX_DEPTH, value_problem
from plait.store import Store, StoredGraph, StoreError

GraphResolver = Callable[[str], StoredGraph]
"""A graph reference (a stored id or slug; where allowed, a file) -> the stored graph to run."""


class StartError(PlaitError):
    """The run cannot start; nothing was executed."""


def stored_graph(
    store: Store,
    ref: str,
    *,
    version: int | None = None,
    missing: str = "no stored graph named",
    hint: str = "give a stored graph id or slug",
) -> StoredGraph:
    """The version of the live stored graph `ref` a run starts on: `version`, or by default its
    promoted version, else its latest (`GraphRepository.get_default`). Every way of starting a
    run without a pinned version comes here (a run, a batch, a child graph, a WORKFLOW_TASK), so a
    promotion moves them all. StartError when there is no such graph (`missing '<ref>'`, `hint`)
    or version, or the graph was deleted."""
    try:
        stored = store.graphs.get_default(ref) if version is None else store.graphs.get(ref)
    except StoreError:
        raise StartError(f"{missing} '{ref}'", hint, kind=Refusal.NOT_FOUND) from None
    if stored.deleted_at is not None:
        raise StartError(
            f"graph '{ref}' was deleted; its runs stay readable, but no new run starts",
            "store it again (`plait graphs import FILE`, or run the graph file) to run it",
            kind=Refusal.NOT_FOUND,
        )
    if version is not None and version != stored.version:
        if not 1 <= version <= stored.latest_version:
            raise StartError(
                f"graph '{stored.slug}' has no version {version}: its versions are 1 to {stored.latest_version}",
                f"`plait graphs versions {stored.slug}` lists them",
                kind=Refusal.NOT_FOUND,
            )
        stored = store.graphs.get(stored.graph_id, version)
    return stored


def input_violations(
    schema: dict[str, Any] | bool | None, value: dict[str, Any], registry: Sequence[SchemaEntry] = ()
) -> list[str]:
    """Every way `value` breaks the run input schema `schema` (its `$ref`s resolve in `registry`);
    none without a schema."""
    return schema_violations(schema, value, registry) if schema is not None else []


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
