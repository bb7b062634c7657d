"""A case's recorded values read at a graph version's schemas, the schema its answers are scored
under, and scores kept as JSON.

A value recorded under an older schema major is brought forward by the graph's `migrations`
exactly as `plait runs show` reads a stored output (`plait.evolve.migrate`), and must then match
the node's out-edge schemas in that version: a value that cannot be read there (no migration, a
failing one, a breaking change the migration does not cover) is reported with the reason, never
scored as it was.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from plait.compile.schema_validator import registry_key, schema_registry
from plait.engine.state import CompiledRun
from plait.evaluation import CaseScore, FieldResult, Similarity, score
from plait.evolve.migrate import migrate_output, schemas_by_id
from plait.evolve.migration_errors import MigrationError
from plait.model.output_meta import SCHEMA_ID, SCHEMA_VERSION, strip_meta, strip_meta_deep
from plait.sandbox.shared import shared_sandbox

PROBLEMS_QUOTED = 3
"""Schema problems a reason quotes."""


class Unreadable(Exception):
    """A recorded value cannot be read at the version's schemas; the message says why."""


class _Sandbox:
    """Migrations run in the process's shared sandbox, under the evaluation as owner."""

    def __init__(self, owner: str) -> None:
        self.owner = owner

    def call(self, function_expression: str, *args: Any, timeout_s: float | None = None) -> Any:
        return shared_sandbox().call(function_expression, *args, timeout_s=timeout_s, owner=self.owner)


class VersionReader:
    """Reads recorded values at one graph version's schemas (its `migrations` bring older majors
    forward); `owner` names who the migrations run for (the evaluation)."""

    def __init__(self, compiled: CompiledRun, version: int, owner: str) -> None:
        self.compiled = compiled
        self.version = version
        self._schemas = schemas_by_id(compiled.graph)
        self._sandbox = _Sandbox(owner)

    def output(self, node_id: str, value: Any, *, what: str) -> Any:
        """`value`, an output of `node_id`, at this version: migrated when older, and checked
        against the node's out-edge schemas here (`what` names it in the reason)."""
        read = self.migrated(node_id, value, what=what)
        contract = self.compiled.contracts[node_id]
        problems = contract.violations(read)
        if problems:
            quoted = "; ".join(problems[:PROBLEMS_QUOTED]) + (" ..." if len(problems) > PROBLEMS_QUOTED else "")
            raise Unreadable(
                f"{what} does not match the out-edge schemas of '{node_id}' in version {self.version}: {quoted} "
                "(add a migration to the graph's `migrations`, or build the set again)"
            )
        if contract.structured and isinstance(read, dict) and SCHEMA_ID not in read:
            return contract.annotate(read)
        return read

    def migrated(self, node_id: str | None, value: Any, *, what: str) -> Any:
        """`value` with each annotated part brought to this version's schema majors."""
        try:
            return migrate_output(
                value, self._schemas, self.compiled.graph.migrations, self._sandbox, node_id=node_id
            ).value
        except MigrationError as exc:
            raise Unreadable(f"{what} cannot be read at version {self.version}: {exc.message}") from None


def annotated_as(value: Any, schemas: list[dict[str, Any]]) -> Any:
    """`value` carrying the schema it was written under (`schemas`, the case's), when it does not
    say so itself: what a migration starts from."""
    if isinstance(value, dict) and SCHEMA_ID not in value and schemas:
        first = schemas[0]
        if isinstance(first.get("id"), str) and first.get("version"):
            return {**value, SCHEMA_ID: first["id"], SCHEMA_VERSION: str(first["version"])}
    return value


def scoring_schema(compiled: CompiledRun, node_id: str | None, expected: Any) -> Any:
    """The schema a node's answer is scored under (None for a run's output): the out-edge schema
    the expected value names, else its first; a run's output by its output nodes' schemas. A
    node without schemas answers text (or anything: compared exactly)."""
    if node_id is None:
        exits = compiled.output_nodes
        if len(exits) == 1:
            return scoring_schema(compiled, exits[0], expected)
        members = expected if isinstance(expected, dict) else {}
        return {
            "type": "object",
            "required": list(exits),
            "properties": {e: scoring_schema(compiled, e, members.get(e)) for e in exits},
        }
    bound = compiled.contracts[node_id].schemas
    if not bound:
        return {"type": "string"} if isinstance(expected, str) else {}
    named = expected.get(SCHEMA_ID) if isinstance(expected, dict) else None
    chosen = next((b for b in bound if b.id == named), bound[0])
    return chosen.schema


def scored(
    compiled: CompiledRun, node_id: str | None, expected: Any, actual: Any, similarity: Similarity | None
) -> CaseScore:
    """`actual` scored against `expected` under the version's schema (`scoring_schema`)."""
    schema = scoring_schema(compiled, node_id, expected)
    registry = schema_registry(registry_key(compiled.graph.schemas))
    return score(schema, strip_meta_deep(expected), strip_meta_deep(actual), registry=registry, similarity=similarity)


def score_json(found: CaseScore, **extra: Any) -> dict[str, Any]:
    """A score as kept in an evaluation's result (`extra`: how it was made, e.g. its level)."""
    return {"passed": found.passed, "score": found.score, "fields": [asdict(f) for f in found.fields], **extra}


def score_of(kept: dict[str, Any] | None) -> CaseScore | None:
    """The score `score_json` kept."""
    if not kept:
        return None
    fields = []
    for f in kept.get("fields") or ():
        items = f.get("items")
        fields.append(
            FieldResult(**{**f, "samples": tuple(f.get("samples") or ()), "items": tuple(items) if items else None})
        )
    return CaseScore(bool(kept["passed"]), float(kept["score"]), fields)


def plain(value: Any) -> Any:
    """A value as people read it in a report: without the keys Plait adds."""
    return strip_meta(value)
