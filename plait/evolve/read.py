"""Reading a run's outputs at the graph's current schema versions (lazy migration).

`runs show`, `GET /api/runs/{id}` and anything else that presents stored outputs read them
here. Most reads need no migration, and finding that out costs one query on the graph's row:
the migration machinery (the graph's models, JSON Schema validation, the sandbox) is loaded
only when some output is older than its schema (`plait.evolve.reader`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plait.model.output_meta import outdated
from plait.store import NodeRunRecord, RunRecord, Store


@dataclass(frozen=True, slots=True)
class Outputs:
    """Effective outputs of a run's node runs, by node run id, and what was migrated on the way."""

    values: dict[str, Any]
    migrated: dict[str, str]
    """node run id -> the migration steps applied, as text (`runs show` notes them)."""


def read_outputs(store: Store, run: RunRecord, nodes: list[NodeRunRecord], *, raw: bool = False) -> Outputs:
    """What `plait runs show` and `GET /api/runs/{id}` present: each node run's effective output at
    the graph's current schema versions (`raw`: as stored). Raises MigrationError."""
    as_stored = {n.id: n.effective_output for n in nodes}
    if raw:
        return Outputs(as_stored, {})
    today = store.graphs.schema_versions(run.graph_id)
    if not any(outdated(value, today) for value in as_stored.values()):
        return Outputs(as_stored, {})
    from plait.evolve.reader import RunReader  # only now: it loads the graph models and the sandbox

    reader = RunReader(store, run)
    try:
        values = {n.id: reader.output(n) for n in nodes}
    finally:
        reader.close()
    return Outputs(values, {rid: ", ".join(str(s) for s in steps) for rid, steps in reader.steps.items()})
