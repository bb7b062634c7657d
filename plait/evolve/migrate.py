"""Lazy migrations: stored outputs of an older schema major are upgraded when read.

A stored output carries `_schema_id` / `_schema_version` (see `plait.engine.contracts`). When its
major differs from the registry's, the graph's `migrations` (JS `migrate_expr` functions, run in
the sandbox, with `from_version` wildcards such as `1.x.x`) are chained until the major matches,
and the result is validated against the current schema. Nothing here writes: the stored original
stays untouched, and the input object is never mutated (callers show `--raw` originals from it).

    result = migrate_output(stored, schemas_by_id(graph), graph.migrations, sandbox, run_id=..., node_id=...)
    result.value, result.steps

The calls are synchronous (`sandbox.call`); from async code use `asyncio.to_thread`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from plait.engine.contracts import schema_violations
from plait.evolve.migration_errors import MigrationFailed, MigrationMissing
from plait.model.graph import GraphDef, SchemaEntry, SchemaMigration
from plait.model.limits import value_problem
from plait.model.output_meta import SCHEMA_ID, SCHEMA_VERSION, is_current, strip_meta
from plait.model.semver import VERSION_PATTERN_RE, Version, major, semver
from plait.sandbox.errors import JsBusyError, JsMemoryError, JsSyntaxError, JsTimeoutError, SandboxError

_MAX_PROBLEMS = 5
"""Validation problems quoted in an error message; all of them stay on `MigrationFailed.problems`."""


class CallSandbox(Protocol):
    """What migrations need from a sandbox (`JsSandbox` fits)."""

    def call(self, function_expression: str, *args: Any, timeout_s: float | None = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class MigrationStep:
    """One applied migration: the actual versions, and the `from_version` pattern that matched."""

    schema_id: str
    from_version: str
    to_version: str
    pattern: str
    member: str | None = None
    """For a MERGE output: the predecessor whose value this step migrated."""

    def __str__(self) -> str:
        where = f"{self.member}: " if self.member else ""
        return f"{where}{self.schema_id} {self.from_version} → {self.to_version}"


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """The value as read at the current version; `steps` is empty when it needed no migration
    (then `value` is the input object itself, not a copy)."""

    value: Any
    steps: tuple[MigrationStep, ...] = ()

    @property
    def migrated(self) -> bool:
        return bool(self.steps)


@dataclass(frozen=True, slots=True)
class _Context:
    run_id: str | None
    node_id: str | None
    member: str | None
    registry: tuple[SchemaEntry, ...] = ()
    """The graph's schemas, which a `$ref` in the target schema may name."""

    def where(self) -> str:
        return _where(self.run_id, self.node_id, self.member)


def schemas_by_id(graph: GraphDef) -> dict[str, SchemaEntry]:
    """The registry as `migrate_output` takes it."""
    return {entry.id: entry for entry in graph.schemas}


def plan(
    schema_id: str,
    from_version: str,
    to_version: str,
    migrations: Sequence[SchemaMigration],
    *,
    run_id: str | None = None,
    node_id: str | None = None,
) -> list[SchemaMigration]:
    """The migrations taking a `schema_id` value at `from_version` to the major of `to_version`
    (empty when the majors already match).

    At each version the migration whose `from_version` pattern matches is taken; among several,
    the most specific (`1.2.3` over `1.2.x` over `1.x.x`; a fixed major outranks a fixed minor,
    which outranks a fixed patch), then the first declared. Only migrations that raise the major
    without going past the target's are considered, so every chain ends (no cycles). Raises
    `MigrationMissing` when there is no path, naming what exists.
    """
    return _plan(schema_id, from_version, to_version, migrations, _Context(run_id, node_id, None))


def _plan(
    schema_id: str, from_version: str, to_version: str, migrations: Sequence[SchemaMigration], ctx: _Context
) -> list[SchemaMigration]:
    context: dict[str, Any] = {"schema_id": schema_id, "from_version": from_version, "to_version": to_version}
    context |= {"run_id": ctx.run_id, "node_id": ctx.node_id}
    where = ctx.where()
    start, target = semver(from_version), semver(to_version)
    if start is None or target is None:
        bad = from_version if start is None else to_version
        raise MigrationMissing(
            f"cannot migrate schema '{schema_id}'{where}: '{bad}' is not a semantic version",
            hint="`_schema_version` and registry versions must be MAJOR.MINOR.PATCH, e.g. 1.0.0",
            **context,
        )
    if start[0] > target[0]:
        raise MigrationMissing(
            f"cannot migrate schema '{schema_id}'{where}: the stored output is at {from_version}, "
            f"newer than the registry's {to_version}; migrations only raise the major",
            hint="read it with the graph version that wrote it (`--raw` shows the stored original)",
            **context,
        )
    own = [m for m in migrations if m.schema_id == schema_id]
    chain: list[SchemaMigration] = []
    current, current_text = start, from_version
    while current[0] != target[0]:
        matching = [m for m in own if _matches(m.from_version, current)]
        usable = [m for m in matching if _raises_major(m, current, target)]
        if not usable:
            reasons = "".join(f"; {_unusable(m, current, target)}" for m in matching)
            via = "" if current == start else f" (reached via {' → '.join(_arrow(m) for m in chain)})"
            raise MigrationMissing(
                f"no migration path for schema '{schema_id}' from {from_version} to {to_version}{where}: "
                f"nothing migrates {current_text}{via}{reasons}; migrations of '{schema_id}': "
                f"{', '.join(_arrow(m) for m in own) or 'none'}",
                hint=f"add a migration with schema_id '{schema_id}' from {current[0]}.x.x to a "
                f"{target[0]}.x.x version (or an intermediate major) in the graph's `migrations`",
                needed=(f"{current[0]}.x.x", to_version),
                **context,
            )
        best = max(usable, key=_specificity)  # max keeps the first of equals: declaration order
        chain.append(best)
        current, current_text = semver(best.to_version) or current, best.to_version
    return chain


def migrate_value(
    value: Any,
    *,
    schema: SchemaEntry,
    migrations: Sequence[SchemaMigration],
    sandbox: CallSandbox,
    run_id: str | None = None,
    node_id: str | None = None,
    timeout_s: float | None = None,
) -> MigrationResult:
    """`value` read at `schema`'s version: migrated when it is an object of `schema` whose stored
    major differs, else unchanged. Raises `MigrationMissing` / `MigrationFailed`."""
    return _migrate(value, schema, migrations, sandbox, _Context(run_id, node_id, None), timeout_s)


def migrate_output(
    output: Any,
    contract_schemas: dict[str, SchemaEntry],
    migrations: Sequence[SchemaMigration],
    sandbox: CallSandbox,
    *,
    run_id: str | None = None,
    node_id: str | None = None,
    timeout_s: float | None = None,
) -> MigrationResult:
    """A node's stored output read at the registry's versions.

    An annotated object is migrated against its `_schema_id`'s entry (unknown ids are left as
    they are). An object without annotations is taken as a MERGE map `{predecessor: output}`:
    each annotated member is migrated (one level), into a new map.
    """
    if not isinstance(output, dict):
        return MigrationResult(output)
    registry = tuple(contract_schemas.values())
    if SCHEMA_ID in output:
        entry = contract_schemas.get(output[SCHEMA_ID]) if isinstance(output[SCHEMA_ID], str) else None
        if entry is None:
            return MigrationResult(output)
        return _migrate(output, entry, migrations, sandbox, _Context(run_id, node_id, None, registry), timeout_s)
    members: dict[str, Any] = {}
    steps: list[MigrationStep] = []
    for key, member in output.items():
        schema_id = member.get(SCHEMA_ID) if isinstance(member, dict) else None
        entry = contract_schemas.get(schema_id) if isinstance(schema_id, str) else None
        if entry is None:
            members[key] = member
            continue
        result = _migrate(member, entry, migrations, sandbox, _Context(run_id, node_id, key, registry), timeout_s)
        members[key] = result.value
        steps.extend(result.steps)
    return MigrationResult(members, tuple(steps)) if steps else MigrationResult(output)


def _migrate(
    value: Any,
    schema: SchemaEntry,
    migrations: Sequence[SchemaMigration],
    sandbox: CallSandbox,
    ctx: _Context,
    timeout_s: float | None,
) -> MigrationResult:
    if not isinstance(value, dict) or is_current(value, schema.id, schema.version):
        return MigrationResult(value)
    stored = value[SCHEMA_VERSION]
    stored_text = stored if isinstance(stored, str) else repr(stored)
    where = ctx.where()
    chain = _plan(schema.id, stored_text, schema.version, migrations, ctx)
    data: Any = strip_meta(value)
    steps: list[MigrationStep] = []
    version = stored_text
    for migration in chain:
        step = MigrationStep(schema.id, version, migration.to_version, migration.from_version, ctx.member)
        data = strip_meta(_run_step(data, migration, step, sandbox, ctx, timeout_s))
        steps.append(step)
        version = migration.to_version
    unstorable = value_problem(data)
    if unstorable is not None:
        raise MigrationFailed(
            f"migrating schema '{schema.id}' to {version}{where} gave a value Plait cannot store: "
            f"{unstorable.describe('result')}",
            cause=f"invalid result: {unstorable.describe('result')}",
            problems=[unstorable.describe("result")],
            hint=f"make the chain produce plain JSON text and numbers (fix the `migrate_expr` up to {version})",
            schema_id=schema.id,
            from_version=steps[-1].from_version,
            to_version=version,
            run_id=ctx.run_id,
            node_id=ctx.node_id,
        )
    problems = schema_violations(schema.schema_, data, ctx.registry)
    if problems:
        last = chain[-1]
        path = " → ".join([stored_text, *(m.to_version for m in chain)])
        quoted = "; ".join(problems[:_MAX_PROBLEMS])
        more = f" (and {len(problems) - _MAX_PROBLEMS} more)" if len(problems) > _MAX_PROBLEMS else ""
        raise MigrationFailed(
            f"migrating schema '{schema.id}' {path}{where} gave a value that does not match schema "
            f"'{schema.id}' {schema.version}: {quoted}{more}",
            cause=f"invalid result: {quoted}{more}",
            problems=problems,
            hint=f"make the chain produce a valid '{schema.id}' {schema.version} value: fix the last "
            f"migration's `migrate_expr` (from {last.from_version} to {last.to_version}) or an earlier one",
            schema_id=schema.id,
            from_version=steps[-1].from_version,
            to_version=last.to_version,
            run_id=ctx.run_id,
            node_id=ctx.node_id,
        )
    return MigrationResult({**data, SCHEMA_ID: schema.id, SCHEMA_VERSION: version}, tuple(steps))


def _run_step(
    data: Any,
    migration: SchemaMigration,
    step: MigrationStep,
    sandbox: CallSandbox,
    ctx: _Context,
    timeout_s: float | None,
) -> dict[str, Any]:
    """One `migrate_expr` on a meta-free value (the sandbox hands it a frozen copy)."""
    try:
        result = sandbox.call(migration.migrate_expr, data, timeout_s=timeout_s)
    except JsBusyError as exc:  # nothing wrong with the migration: the sandbox had no room for it
        raise MigrationFailed(
            f"migration of schema '{step.schema_id}' from {step.from_version} to {step.to_version}{ctx.where()} "
            f"could not run: {exc}",
            cause=str(exc),
            hint="other reads are migrating outputs right now; read again in a moment",
            schema_id=step.schema_id,
            from_version=step.from_version,
            to_version=step.to_version,
            run_id=ctx.run_id,
            node_id=ctx.node_id,
        ) from None
    except SandboxError as exc:
        cause = _sandbox_cause(exc)
    else:
        if isinstance(result, dict):
            return result
        cause = f"it returned {_json_kind(result)}, not an object"
    raise MigrationFailed(
        f"migration of schema '{step.schema_id}' from {step.from_version} to {step.to_version}{ctx.where()} "
        f"failed: {cause}",
        cause=cause,
        hint=f"fix the `migrate_expr` of the migration of '{step.schema_id}' from {migration.from_version} "
        f"to {migration.to_version} in the graph's `migrations`: it must return the upgraded object",
        schema_id=step.schema_id,
        from_version=step.from_version,
        to_version=step.to_version,
        run_id=ctx.run_id,
        node_id=ctx.node_id,
    )


def _sandbox_cause(exc: SandboxError) -> str:
    if isinstance(exc, JsTimeoutError):
        return f"it timed out ({exc})"
    if isinstance(exc, JsMemoryError):
        return f"it ran out of memory ({exc})"
    if isinstance(exc, JsSyntaxError):
        return f"it does not parse: {exc}"
    return f"it threw {exc}"


def _where(run_id: str | None, node_id: str | None, member: str | None = None) -> str:
    parts = [f"run {run_id}" if run_id else "", f"node {node_id}" if node_id else ""]
    parts.append(f"input from {member}" if member else "")
    named = ", ".join(p for p in parts if p)
    return f" ({named})" if named else ""


def _matches(pattern: str, version: Version) -> bool:
    if not VERSION_PATTERN_RE.match(pattern):
        return False
    return all(part == "x" or int(part) == number for part, number in zip(pattern.split("."), version, strict=True))


def _specificity(migration: SchemaMigration) -> tuple[bool, ...]:
    return tuple(part != "x" for part in migration.from_version.split("."))


def _raises_major(migration: SchemaMigration, current: Version, target: Version) -> bool:
    to_major = major(migration.to_version)
    return to_major is not None and current[0] < to_major <= target[0]


def _unusable(migration: SchemaMigration, current: Version, target: Version) -> str:
    to_major = major(migration.to_version)
    if to_major is None:
        return f"{_arrow(migration)} has no valid to_version"
    if to_major <= current[0]:
        return f"{_arrow(migration)} does not raise the major"
    return f"{_arrow(migration)} goes past major {target[0]}"


def _arrow(migration: SchemaMigration) -> str:
    return f"{migration.from_version} → {migration.to_version}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__
