"""Building the API's response bodies from the store's records: every route presents a run, a
node run or a graph through these, so they look the same wherever they appear."""

from __future__ import annotations

from typing import Any

from plait.api.outdated import outdated_out
from plait.api.schemas import (
    CorrectionOut,
    GraphOut,
    GraphSummaryOut,
    SavedOut,
    SchemaChangeOut,
    VersionOut,
)
from plait.compile.dump import graph_to_data
from plait.evolve.catalog import GraphSummary
from plait.evolve.classify import RegistryChange
from plait.evolve.save import Saved
from plait.runs.corrections import Correction
from plait.store import NodeRunRecord, RunRecord, StoredGraph
from plait.store.graph_admin import VersionInfo


def summary_out(summary: GraphSummary) -> GraphSummaryOut:
    """The list entry of a graph."""
    g = summary.listed
    return GraphSummaryOut(
        id=g.graph_id,
        slug=g.slug,
        name=g.name,
        version=g.version,
        schema_version=g.schema_version,
        source_type=g.source_type,
        nodes=g.nodes,
        updated_at=g.updated_at,
        parent_id=g.parent_def_id,
        parent_updated=summary.parent_updated,
    )


def graph_out(stored: StoredGraph, parent_updated: bool) -> GraphOut:
    """A stored graph version as the API returns it."""
    return GraphOut(
        **_summary_fields(stored),
        parent_updated=parent_updated,
        latest_version=stored.latest_version,
        created_at=stored.created_at,
        graph=graph_to_data(stored.graph),
    )


def _summary_fields(g: StoredGraph) -> dict[str, Any]:
    return {
        "id": g.graph_id,
        "slug": g.slug,
        "name": g.graph.name or g.slug,
        "version": g.version,
        "schema_version": g.schema_version,
        "source_type": g.source_type,
        "nodes": len(g.graph.nodes),
        "updated_at": g.updated_at,
        "parent_id": g.graph.parent_def_id,
    }


def schema_changes(change: RegistryChange) -> list[SchemaChangeOut]:
    """Each schema a save changes (or would change), with its level and findings."""
    return [
        SchemaChangeOut(
            schema_id=e.schema_id,
            status=str(e.status),
            level=str(e.level),
            from_version=e.old_version,
            to_version=e.new_version,
            findings=[str(f) for f in e.findings],
        )
        for e in change.changed
    ]


def saved_out(stored: StoredGraph, saved: Saved | None = None) -> SavedOut:
    """The answer to a save; without `saved`, no schema changes are reported."""
    changes = schema_changes(saved.change) if saved is not None else []
    return SavedOut(
        id=stored.graph_id,
        slug=stored.slug,
        version=stored.version,
        schema_version=stored.schema_version,
        created=stored.created,
        schema_changes=changes,
        warnings=list(saved.warnings) if saved is not None else [],
    )


def version_out(v: VersionInfo) -> VersionOut:
    """One entry of a graph's version list."""
    return VersionOut(version=v.version, schema_version=v.schema_version, created_at=v.created_at, runs=v.runs)


def run_fields(r: RunRecord, executing: bool) -> dict[str, Any]:
    """The fields of `RunOut` for a run; `executing`: this server drives it now."""
    return {**r.summary(), "executing_here": executing}


def node_fields(
    n: NodeRunRecord, *, current: bool, effective: Any, migrated: str | None = None, outdated: Any = None
) -> dict[str, Any]:
    """The fields of `NodeRunOut`, with the effective output as the reader migrated it (or as
    stored, with the `outdated` notice saying why)."""
    fields = {**n.summary(), "current": current, "effective_output": effective, "migrated": migrated}
    return fields | {"outdated": outdated_out(outdated)}


def correction_out(result: Correction, executing: bool) -> CorrectionOut:
    """The answer to a correction."""
    return CorrectionOut(
        run_id=result.run_id, stale=result.stale, queued=result.queued, kept=result.kept, executing=executing
    )
