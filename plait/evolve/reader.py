"""`RunReader`: a run's effective outputs migrated, on the fly, to the graph's current schemas.

An output whose `_schema_version` major is older than the one in the graph's latest version is
migrated by the graph's `migrations`; the stored original is never written back. Migrations
run in the process's shared sandbox (`plait.sandbox.shared`), started only when one is needed
and reused by every reader, so reading runs never starts a sandbox per request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from plait.evolve.migrate import MigrationStep, migrate_output, schemas_by_id
from plait.model.graph import SchemaEntry, SchemaMigration
from plait.sandbox.shared import shared_sandbox
from plait.store import NodeRunRecord, RunRecord, Store


@dataclass
class RunReader:
    """Reads one run's node outputs in the shape of the graph's current schemas: each effective
    output is migrated when its schema major is older, and never written back. `steps` says,
    per node run id, which migrations were applied."""

    store: Store
    run: RunRecord
    steps: dict[str, tuple[MigrationStep, ...]] = field(default_factory=dict)
    _today: tuple[dict[str, SchemaEntry], tuple[SchemaMigration, ...]] | None = None

    def output(self, record: NodeRunRecord) -> Any:
        """The node run's effective output, migrated to the current schemas when it is older."""
        if self._today is None:  # the graph's latest version: today's schemas, read once
            graph = self.store.graphs.get(self.run.graph_id).graph
            self._today = schemas_by_id(graph), tuple(graph.migrations)
        schemas, migrations = self._today
        result = migrate_output(
            record.effective_output,
            schemas,
            migrations,
            self,
            run_id=self.run.id,
            node_id=record.node_id,
        )
        if result.steps:
            self.steps[record.id] = result.steps
        return result.value

    def call(self, function_expression: str, *args: Any, timeout_s: float | None = None) -> Any:
        """The sandbox side of a migration step, in the shared sandbox (owner: this run)."""
        return shared_sandbox().call(function_expression, *args, timeout_s=timeout_s, owner=self.run.id)

    def close(self) -> None:
        """Nothing to free: the shared sandbox outlives readers (kept for callers that close)."""
