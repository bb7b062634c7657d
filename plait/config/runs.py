"""`[runs]`: the budget of one run, counted over the run and all the child runs under it.

    [runs]
    max_child_runs = 10000          # child runs (SUBGRAPH, MAP items, LOOP iterations), all levels
    max_node_runs = 100000          # node activations, in the run and its child runs
    max_stored_bytes = 268435456    # bytes of node outputs, snapshots, attempts and errors stored

A graph whose static bounds (LOOP iterations × MAP items × ...) go over a budget is refused when
it is validated; a run that reaches one at run time fails, naming it (docs/engine.md).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from plait.config.providers import Strict


class RunsConfig(Strict):
    """`[runs]`: what one run may spend of the machine, its child runs included."""

    max_child_runs: Annotated[int, Field(ge=0, le=10_000_000)] = 10_000
    """Child runs a run may start, at every level below it (0: none)."""
    max_node_runs: Annotated[int, Field(ge=1, le=100_000_000)] = 100_000
    """Node activations a run may execute, its child runs' included."""
    max_stored_bytes: Annotated[int, Field(ge=1 << 20, le=1 << 40)] = 256 << 20
    """Bytes of node-run records (outputs, input snapshots, attempts, errors, as stored JSON) a run
    and its child runs may store."""
