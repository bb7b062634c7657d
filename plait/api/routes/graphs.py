"""/api/graphs: stored graphs, their versions, import/export, forks (as `plait graphs` does)."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response

from plait.api.auth import CallerDep
from plait.api.previews import SavePreviewOut, preview_out
from plait.api.responses import graph_out, saved_out, summary_out, version_out
from plait.api.schemas import (
    MAX_INT,
    DeletedOut,
    ForkDiffOut,
    ForkIn,
    GraphOut,
    GraphPage,
    GraphSource,
    MergeIn,
    MergeRefork,
    PromoteIn,
    PromotionOut,
    SavedOut,
    SourceTypeName,
    VersionOut,
)
from plait.api.services import delete_graph, get_graph
from plait.api.state import ServerState, get_state
from plait.compile.dump import dump_yaml, graph_to_data
from plait.evolve.catalog import list_graphs
from plait.evolve.fork import diff_fork, fork_graph, merge_from_parent, refork
from plait.evolve.save import preview_save
from plait.evolve.upload import UploadMode, save_upload, update_of
from plait.runs.promote import promote, promotions, shown

router = APIRouter(prefix="/graphs", tags=["graphs"])
State = Annotated[ServerState, Depends(get_state)]
VersionQuery = Annotated[int | None, Query(ge=1, le=MAX_INT, description="A stored version (default: the latest).")]


@router.get("", response_model=GraphPage)
def list_stored(
    state: State,
    source_type: Annotated[SourceTypeName | None, Query(description="Only graphs of this source type.")] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_INT)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> GraphPage:
    """Live graphs by slug (latest version of each); forks whose parent moved on are flagged."""
    summaries = list_graphs(state.store, source_type=source_type)
    page = summaries[offset : offset + limit]
    return GraphPage(items=[summary_out(s) for s in page], total=len(summaries), offset=offset, limit=limit)


@router.post("", response_model=SavedOut, status_code=201)
def create(state: State, body: GraphSource) -> SavedOut:
    """Store a new graph (version 1); 409 when its id is taken (update it instead)."""
    saved = save_upload(state.store, body.content, mode=UploadMode.CREATE, as_json=body.as_json)
    return saved_out(saved.stored, saved)


@router.post("/import", response_model=SavedOut)
def import_graph(state: State, body: GraphSource, response: Response) -> SavedOut:
    """A new graph, or a new version of the graph with the same id (never a duplicate), like
    `plait graphs import`; 201 when something was stored, 200 when the content was unchanged."""
    saved = save_upload(state.store, body.content, mode=UploadMode.IMPORT, as_json=body.as_json)
    response.status_code = 201 if saved.stored.created else 200
    return saved_out(saved.stored, saved)


@router.get("/{ref}", response_model=GraphOut)
def get(state: State, ref: str, version: VersionQuery = None) -> GraphOut:
    """One graph version (default: latest) by id or slug, with its schema registry, the version
    runs use by default (`promoted_version`) and every promotion."""
    stored, parent_updated = get_graph(state.store, ref, version)
    found = promotions(state.store, stored.graph_id)
    return graph_out(stored, parent_updated).model_copy(
        update={
            "promoted_version": found.promoted_version,
            "promotions": [PromotionOut(**p.as_json()) for p in found.history],
        }
    )


@router.put("/{ref}", response_model=SavedOut)
def update(state: State, ref: str, body: GraphSource) -> SavedOut:
    """Store a new version (`version` + 1, schema_version derived from what changed); an
    unchanged graph keeps its version (`created: false`). System graphs are read-only (403).
    With `base_version`, a graph saved since that version is not overwritten (409)."""
    saved = save_upload(
        state.store, body.content, mode=UploadMode.UPDATE, ref=ref, as_json=body.as_json, base_version=body.base_version
    )
    return saved_out(saved.stored, saved)


@router.post("/{ref}/preview", response_model=SavePreviewOut)
def preview(state: State, ref: str, body: GraphSource) -> SavePreviewOut:
    """What `PUT /api/graphs/{ref}` with this body would store: the schema-change classification
    and the versions, validated the same way; nothing is stored."""
    return preview_out(preview_save(state.store, update_of(state.store, ref, body.content, as_json=body.as_json)))


@router.delete("/{ref}", response_model=DeletedOut)
def delete(
    state: State,
    ref: str,
    force: Annotated[bool, Query(description="Delete a graph that has runs (they stay readable).")] = False,
) -> DeletedOut:
    """Delete a graph (not a system graph: 403); 409 when it has runs and `force` is not set."""
    stored, kept = delete_graph(state.store, ref, force=force)
    return DeletedOut(id=stored.graph_id, slug=stored.slug, deleted=True, runs_kept=kept)


@router.get("/{ref}/versions", response_model=list[VersionOut])
def versions(state: State, ref: str) -> list[VersionOut]:
    """Every version, oldest first, with how many runs pinned each."""
    stored = state.store.graphs.get(ref)
    return [version_out(v) for v in state.store.graph_admin.versions(stored.graph_id)]


@router.get(
    "/{ref}/export",
    response_class=Response,
    responses={200: {"content": {"application/yaml": {}, "application/json": {}}}},
)
def export(state: State, ref: str, version: VersionQuery = None, format: Literal["yaml", "json"] = "yaml") -> Response:
    """One YAML (or JSON) file that import reads back as the same graph."""
    stored = state.store.graphs.get(ref, version)
    if format == "json":
        text = json.dumps(graph_to_data(stored.graph), indent=2, ensure_ascii=False) + "\n"
        return Response(text, media_type="application/json")
    return Response(dump_yaml(stored.graph), media_type="application/yaml")


@router.post("/{ref}/fork", response_model=SavedOut, status_code=201)
def fork(state: State, ref: str, body: ForkIn | None = None) -> SavedOut:
    """Copy a graph (a system graph too) into an editable fork that remembers its parent."""
    name = body.name if body is not None else None
    return saved_out(fork_graph(state.store, ref, name))


@router.get("/{ref}/diff", response_model=ForkDiffOut)
def diff(
    state: State,
    ref: str,
    against: Annotated[str, Query(pattern=r"^(parent|[0-9]{1,9})$", description="`parent` or a parent version.")] = (
        "parent"
    ),
) -> ForkDiffOut:
    """Three-way diff of a fork: the parent as forked (or at `against`), the parent now, the fork."""
    version = None if against == "parent" else int(against)
    return ForkDiffOut.model_validate(diff_fork(state.store, ref, version).to_json())


@router.post("/{ref}/merge", response_model=SavedOut)
def merge(state: State, ref: str, body: MergeIn) -> SavedOut:
    """Take chosen parent changes into the fork (a new fork version), or re-fork; 409 with the
    conflicting fields when the fork changed them too."""
    if isinstance(body, MergeRefork):
        return saved_out(refork(state.store, ref))
    return saved_out(merge_from_parent(state.store, ref, body.from_parent))


@router.post("/{ref}/promote", response_model=PromotionOut)
def promote_version(state: State, caller: CallerDep, ref: str, body: PromoteIn) -> PromotionOut:
    """Make `version` what runs of the graph use by default, like `plait graphs promote`: the
    newest completed evaluation of the `gate` set for that version must say pass, or `force`
    with a `note` promotes anyway (recorded as forced). 404 unknown graph, version or set; 403 a
    system graph; 409 refused by the gate (the verdict in `details`); 422 no gate without force,
    force without note."""
    done = promote(state.store, ref, body.version, gate=body.gate, force=body.force, note=body.note, by=caller.by)
    return PromotionOut(**shown(state.store, done).as_json())
