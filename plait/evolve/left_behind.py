"""Stored outputs a save leaves behind: those of a schema whose major it raises, with no
migration in the new version to bring them forward.

Reading a run shows such an output as it was stored, with a notice (`plait.evolve.read`). The
person saving is the one who can write the missing migration, so the save says, next to its
schema-change warnings, how many stored outputs are left behind, how many of them the new
schema refuses, and which migration to write. The check reads a bounded number of the newest
outputs (`SCAN_LIMIT`), so a save of a graph with a long history stays quick.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from plait.engine.contracts import schema_violations
from plait.evolve.classify import EntryStatus, RegistryChange
from plait.evolve.migrate import plan
from plait.evolve.migration_errors import MigrationMissing
from plait.model.graph import GraphDef, SchemaEntry
from plait.model.output_meta import SCHEMA_ID, SCHEMA_VERSION, annotated, strip_meta
from plait.model.semver import major
from plait.store import Store

SCAN_LIMIT = 5000
"""Newest stored outputs (node runs with an output) a save checks."""


@dataclass(frozen=True, slots=True)
class LeftBehind:
    """The stored outputs of one schema that its new major leaves without a migration."""

    schema_id: str
    version: str
    """The schema's version after the save."""
    outputs: int
    """Stored outputs at an older major that no migration of the new version brings forward."""
    invalid: int
    """Of `outputs`, how many the new schema refuses as they are."""
    runs: int
    migrations: tuple[tuple[str, str], ...]
    """`(from_version, to_version)` of each migration to write (one per older major)."""
    scanned: int
    """Stored outputs of the graph that were checked."""
    complete: bool
    """Every stored output of the graph was checked (else only the newest `SCAN_LIMIT`)."""

    def warning(self) -> str:
        """One line for the save's warnings: how many, and what to write."""
        runs = f"{_count(self.runs, 'run')} of this graph" + (
            "" if self.complete else f", newest {self.scanned} outputs"
        )
        outputs = _count(self.outputs, "stored output")
        them = "it" if self.outputs == 1 else "them"
        verb = "validates" if self.invalid == 1 else "validate"
        if self.invalid == self.outputs:
            head = f"{outputs} ({runs}) no longer {verb}"
        else:
            head = f"{self.invalid} of the {outputs} of an older major ({runs}) no longer {verb}"
        write = ", and ".join(
            f"one with schema_id {self.schema_id}, from_version {start}, to_version {target}"
            for start, target in self.migrations
        )
        return (
            f"schema '{self.schema_id}' {self.version}: {head} under {self.version}, and no migration brings {them} "
            f"forward (reading those runs shows {them} as stored, with a notice); add to the graph's `migrations` "
            f"{write}, with a migrate_expr that returns the old value in the {self.version} shape"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "schema_id": self.schema_id,
            "version": self.version,
            "outputs": self.outputs,
            "invalid": self.invalid,
            "runs": self.runs,
            "migrations": [
                {"schema_id": self.schema_id, "from_version": start, "to_version": target}
                for start, target in self.migrations
            ],
            "complete": self.complete,
        }


def left_behind(store: Store, graph_id: str, graph: GraphDef, change: RegistryChange) -> tuple[LeftBehind, ...]:
    """For each schema whose major `change` raised, the stored outputs of the graph `graph_id` (of
    runs of any version) that `graph`, the version being saved, has no migration path for."""
    raised = {
        e.schema_id: e.new_version
        for e in change.entries
        if e.status is EntryStatus.CHANGED
        and e.old_version is not None
        and e.new_version is not None
        and (major(e.new_version) or 0) > (major(e.old_version) or 0)
    }
    if not raised:
        return ()
    stored = store.graph_admin.stored_outputs(graph_id, SCAN_LIMIT + 1)
    complete = len(stored) <= SCAN_LIMIT
    stored = stored[:SCAN_LIMIT]
    entries = {e.id: e for e in graph.schemas}
    found = []
    for schema_id, version in raised.items():
        found.append(_check(schema_id, version, entries[schema_id], graph, stored, complete))
    return tuple(lb for lb in found if lb is not None)


def _check(
    schema_id: str,
    version: str,
    entry: SchemaEntry,
    graph: GraphDef,
    stored: list[tuple[str, Any]],
    complete: bool,
) -> LeftBehind | None:
    outputs = invalid = 0
    runs: set[str] = set()
    wanted: dict[tuple[str, str], None] = {}
    for run_id, output in stored:
        for value in _of_schema(output, schema_id):
            try:
                plan(schema_id, str(value[SCHEMA_VERSION]), version, graph.migrations)
                continue  # a migration brings it forward
            except MigrationMissing as missing:
                if missing.needed is None:
                    continue  # newer than the schema, or no version: no migration can help
                wanted[missing.needed] = None
            outputs += 1
            runs.add(run_id)
            if schema_violations(entry.schema_, strip_meta(value), graph.schemas):
                invalid += 1
    if not outputs:
        return None
    return LeftBehind(schema_id, version, outputs, invalid, len(runs), tuple(wanted), len(stored), complete)


def _of_schema(output: Any, schema_id: str) -> Iterable[dict[str, Any]]:
    """The annotated parts of a stored output (itself, or MERGE members) bound to `schema_id`."""
    for _member, value in annotated(output):
        if value.get(SCHEMA_ID) == schema_id and SCHEMA_VERSION in value:
            yield value


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
