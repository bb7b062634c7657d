"""Reading a run's outputs at the graph's current schema versions (lazy migration).

`runs show`, `GET /api/runs/{id}` and anything else that presents stored outputs read them
here. Most reads need no migration, and finding that out costs one query on the graph's row:
the migration machinery (the graph's models, JSON Schema validation, the sandbox) is loaded
only when some output is older than its schema (`plait.evolve.reader`).

A read never fails because of a schema change. An output that cannot be brought to today's
schema (no migration leads there, or one fails) is shown as it was stored, with an `Outdated`
notice naming the schema, both versions and what to write: a graph edited after its runs must
not make those runs unreadable, and the person reading is the one who can add the migration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from plait.model.output_meta import SCHEMA_ID, SCHEMA_VERSION, annotated
from plait.model.output_meta import outdated as older_than
from plait.store import NodeRunRecord, RunRecord, Store

if TYPE_CHECKING:
    from plait.evolve.migration_errors import MigrationError


@dataclass(frozen=True, slots=True)
class Outdated:
    """Why a node run's output is shown as stored: it predates its schema's current version and
    could not be brought forward. Surfaces phrase it (a CLI line, a page's banner, a JSON field)."""

    schema_id: str
    stored_version: str
    current_version: str
    reason: str
    """`no_migration` (no chain of migrations leads to the current version) or `migration_failed`."""
    problem: str
    """What went wrong, naming the run and the node."""
    fix: str
    """What to do about it, in the graph's terms (its `migrations`)."""
    migration: tuple[str, str] | None = None
    """`(from_version, to_version)` of the migration to add to the graph, when one is missing."""

    def summary(self) -> str:
        """One line: which schema, which versions."""
        return (
            f"stored at schema '{self.schema_id}' {self.stored_version}, which predates the graph's "
            f"{self.current_version}: shown as stored"
        )

    def as_json(self) -> dict[str, Any]:
        wanted = self.migration
        return {
            "schema_id": self.schema_id,
            "stored_version": self.stored_version,
            "current_version": self.current_version,
            "reason": self.reason,
            "message": self.problem,
            "fix": self.fix,
            "migration": (
                {"schema_id": self.schema_id, "from_version": wanted[0], "to_version": wanted[1]} if wanted else None
            ),
        }


@dataclass(frozen=True, slots=True)
class Outputs:
    """Effective outputs of a run's node runs, by node run id, and what was migrated on the way."""

    values: dict[str, Any]
    migrated: dict[str, str]
    """node run id -> the migration steps applied, as text (`runs show` notes them)."""
    outdated: dict[str, Outdated] = field(default_factory=dict)
    """node run id -> why its value is the stored one although its schema moved on."""


def read_outputs(store: Store, run: RunRecord, nodes: list[NodeRunRecord], *, raw: bool = False) -> Outputs:
    """What `plait runs show` and `GET /api/runs/{id}` present: each node run's effective output at
    the graph's current schema versions (`raw`: as stored). An output no migration brings forward
    is given as stored, with its notice in `outdated`; nothing here raises for a schema change."""
    as_stored = {n.id: n.effective_output for n in nodes}
    if raw:
        return Outputs(as_stored, {})
    today = store.graphs.schema_versions(run.graph_id)
    if not any(older_than(value, today) for value in as_stored.values()):
        return Outputs(as_stored, {})
    from plait.evolve.migration_errors import MigrationError
    from plait.evolve.reader import RunReader  # only now: it loads the graph models and the sandbox

    reader = RunReader(store, run)
    values: dict[str, Any] = {}
    notices: dict[str, Outdated] = {}
    try:
        for n in nodes:
            try:
                values[n.id] = reader.output(n)
            except MigrationError as exc:
                values[n.id] = as_stored[n.id]
                notices[n.id] = notice(exc, as_stored[n.id], today)
    finally:
        reader.close()
    migrated = {rid: ", ".join(str(s) for s in steps) for rid, steps in reader.steps.items()}
    return Outputs(values, migrated, notices)


def notice(exc: MigrationError, value: Any, today: Mapping[str, str]) -> Outdated:
    """The notice for `value`, which `exc` says cannot be read at today's versions `today`."""
    from plait.evolve.migration_errors import MigrationMissing

    current = today.get(exc.schema_id, exc.to_version)
    stored = _stored_version(value, exc.schema_id, current) or exc.from_version
    if not isinstance(exc, MigrationMissing):
        return Outdated(exc.schema_id, stored, current, "migration_failed", exc.message, exc.hint or "")
    if exc.needed is None:
        fix = (
            "no migration applies to it: migrations raise a schema's major from an older version, and this output's "
            f"version ({stored}) is not older than {current}"
        )
        return Outdated(exc.schema_id, stored, current, "no_migration", exc.message, fix)
    start, target = exc.needed
    fix = (
        f"add a migration to the graph's `migrations`: schema_id {exc.schema_id}, from_version {start}, "
        f"to_version {target}, and a migrate_expr that returns the old value in the {target} shape"
    )
    return Outdated(exc.schema_id, stored, current, "no_migration", exc.message, fix, exc.needed)


def _stored_version(value: Any, schema_id: str, current: str) -> str | None:
    """The version `value` (or, for a MERGE map, the member that failed) was stored at."""
    for _member, item in annotated(value):
        version = item.get(SCHEMA_VERSION)
        if item.get(SCHEMA_ID) == schema_id and version != current:
            return str(version)
    return None
