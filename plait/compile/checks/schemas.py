"""Schema passes: JSON Schema validity, migrations, conflicting out-edge contracts, unused entries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plait.compile.context import CheckContext
from plait.compile.diagnostics import Category
from plait.compile.schema_refs import reference_problems
from plait.compile.schema_validator import NO_REGISTRY, registry_key
from plait.compile.schemas import check_json_schema, schema_conflicts
from plait.compile.source import Path_
from plait.model.nodes import NodeType, node_field

CONFIG, PLANNING = Category.CONFIG, Category.PLANNING


def check_schema_documents(ctx: CheckContext) -> None:
    """The schema entries, `input_schema` and tool parameters are valid JSON Schemas whose
    references stay inside the graph (tool parameters: inside themselves, as the model sees only
    them) and whose patterns RE2 can run."""
    graph = ctx.graph
    section = _schemas_key(ctx)
    refs = _Refs(registry_key(graph.schemas), frozenset(ctx.schemas))
    for index, entry in enumerate(graph.schemas):
        path: Path_ = (section, index, "schema")
        _report_invalid(ctx, entry.schema_, path, f"schema '{entry.id}'")
        edges = sorted(e.id for e in graph.edges if e.schema_id == entry.id and e.id)
        on = f" (on edge{'s' if len(edges) > 1 else ''} {', '.join(edges)})" if edges else ""
        _report_refs(ctx, entry.schema_, path, f"schema '{entry.id}'{on}", refs, edge_id=edges[0] if edges else None)
    if graph.input_schema is not None:
        _report_invalid(ctx, graph.input_schema, ("input_schema",), "input_schema")
        _report_refs(ctx, graph.input_schema, ("input_schema",), "input_schema", refs)
    local = _Refs(NO_REGISTRY, frozenset())  # tool parameters go to the model as written: it cannot see the registry
    for node_id, node in ctx.nodes.items():
        for t_index, tool in enumerate(node_field(node, "tools", [])):
            tool_path = ctx.node_path(node_id, "tools", t_index, "parameters")
            what = f"parameters of tool '{tool.name}'"
            _report_invalid(ctx, tool.parameters, tool_path, what, node_id=node_id)
            _report_refs(ctx, tool.parameters, tool_path, what, local, node_id=node_id)


@dataclass(frozen=True, slots=True)
class _Refs:
    """What references in a schema may name: the registry (as its key) and its ids."""

    registry: str
    ids: frozenset[str]


def _report_refs(
    ctx: CheckContext,
    schema: Any,
    base: Path_ | None,
    what: str,
    refs: _Refs,
    *,
    node_id: str | None = None,
    edge_id: str | None = None,
) -> None:
    """References outside the graph, unresolvable references and patterns RE2 cannot run."""
    if check_json_schema(schema):
        return  # not a valid schema: reported as such, its references mean nothing yet
    for problem in reference_problems(schema, refs.registry, refs.ids):
        inner = "/".join(str(p) for p in problem.path)
        ctx.report(
            CONFIG,
            problem.code,
            f"{what} at '{inner}': {problem.message}",
            node_id=node_id,
            edge_id=edge_id,
            path=(*base, *problem.path) if base is not None else None,
            hint=problem.hint,
        )


def _schemas_key(ctx: CheckContext) -> str:
    data = ctx.loaded.doc.data
    return "schema_registry" if "schemas" not in data and "schema_registry" in data else "schemas"


def _report_invalid(ctx: CheckContext, schema: Any, base: Path_ | None, what: str, node_id: str | None = None) -> None:
    for problem in check_json_schema(schema):
        inner = "/".join(str(p) for p in problem.path)
        path = (*base, *problem.path) if base is not None else None
        ctx.report(
            CONFIG,
            "invalid_json_schema",
            f"{what} is not a valid JSON Schema" + (f" at '{inner}'" if inner else "") + f": {problem.message}",
            node_id=node_id,
            path=path,
            hint="see https://json-schema.org/draft-07 for the keywords",
        )


def check_migrations(ctx: CheckContext) -> None:
    """Each migration names a known schema and goes forward, to no newer major version than the
    entry's; a warning for a breaking schema version that no migration upgrades to."""
    for index, migration in enumerate(ctx.graph.migrations):
        path = ("migrations", index)
        if migration.schema_id in ctx.loaded.invalid_schema_ids:
            continue  # the entry itself is reported; its version is unknown
        if migration.schema_id not in ctx.schemas:
            ctx.report(
                CONFIG,
                "unknown_schema",
                f"migration for unknown schema '{migration.schema_id}'",
                path=(*path, "schema_id"),
                hint="migrations upgrade entries of `schemas:`; fix the id",
            )
            continue
        written = ctx.schemas[migration.schema_id].version
        if _semver(migration.from_version) >= _semver(migration.to_version):
            ctx.report(
                CONFIG,
                "migration_backwards",
                f"migration of {migration.schema_id} from {migration.from_version} to {migration.to_version} does "
                "not go forward",
                path=(*path, "from_version"),
                hint="migrations upgrade old outputs: from_version must be older than to_version",
            )
        elif _major(migration.to_version) > _major(written):
            _beyond_current(ctx, migration.schema_id, migration.to_version, written, (*path, "to_version"))
    for entry in ctx.graph.schemas:
        if (
            entry.breaking_change
            and _major(entry.version) > 1
            and not any(m.schema_id == entry.id for m in ctx.graph.migrations)
        ):
            ctx.report(
                PLANNING,
                "breaking_without_migration",
                f"schema '{entry.id}' {entry.version} is a breaking change with no migration; stored "
                "outputs of older versions cannot be read back",
                path=_entry_path(ctx, entry.id),
                hint="add a `migrations:` entry with from_version/to_version and migrate_expr",
                warning=True,
            )


def _beyond_current(ctx: CheckContext, schema_id: str, target: str, written: str, path: Path_) -> None:
    """A migration past the version its schema entry is written at: fine when the store gives the
    entry that version or a newer one (the version an import reported), else an error."""
    stored = ctx.stored_versions.get(schema_id, written)
    if _major(target) <= _major(stored):
        return
    if stored == written:
        message = f"migration targets {schema_id} {target}, newer than the registry's {written}"
        hint = (
            "to_version must not be newer than the schema's version: the entry's, or the higher one the store "
            "gave it (the version an import of the graph reported)"
        )
    else:
        message = (
            f"migration targets {schema_id} {target}, newer than {stored}, the version the schema is stored at "
            f"(the entry says {written})"
        )
        hint = f"to_version may be at most {stored}; for a new major on purpose, write it as the entry's `version`"
    ctx.report(CONFIG, "migration_beyond_current", message, path=path, hint=hint)


def _entry_path(ctx: CheckContext, schema_id: str) -> Path_ | None:
    return ctx.loaded.schema_paths.get(schema_id)


def _semver(version: str) -> tuple[int, ...]:
    """Version as a tuple; in a pattern, `x` counts as 0, giving the oldest version it matches."""
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def check_schema_conflicts(ctx: CheckContext) -> None:
    """A node's out-edge schemas can all hold at once, since one output must meet them all
    (CONDITION nodes are not checked)."""
    for node_id, node in ctx.nodes.items():
        if node.type == NodeType.CONDITION:
            continue
        schemas = ctx.out_schemas(node_id)
        if len(schemas) < 2:
            continue
        for conflict in schema_conflicts(schemas):
            ids = sorted({e.schema_id for e in ctx.out_edges[node_id] if e.schema_id})
            ctx.report(
                PLANNING,
                "schema_conflict",
                f"out-edge schemas {', '.join(ids)} of '{node_id}' cannot all hold: {conflict}",
                node_id=node_id,
                hint="one output must satisfy every out-edge schema; make them compatible or split the node",
            )


def check_unused_schemas(ctx: CheckContext) -> None:
    """A warning for each schema entry that no edge binds."""
    used = {e.schema_id for e in ctx.graph.edges if e.schema_id}
    for entry in ctx.graph.schemas:
        if entry.id not in used:
            ctx.report(
                CONFIG,
                "unused_schema",
                f"schema '{entry.id}' is not bound to any edge",
                path=_entry_path(ctx, entry.id),
                hint="bind it with `schema_id:` on an edge, or remove it",
                warning=True,
            )
