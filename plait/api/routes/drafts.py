"""/api/drafts: a graph's edits kept before they are a version, valid or not.

The workbench keeps the graph a person is editing here as they edit it, so a graph being built
(usually invalid for a while) survives a reload and another browser. Each answer says what is
still wrong with the draft, in the words of `POST /api/graphs/validate`. Storing it as a version
is `POST /api/graphs` (a new graph) or `PUT /api/graphs/{ref}`, with every check.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, Field

from plait.api.schemas import MAX_INT, CheckedIn
from plait.api.state import ServerState, get_state
from plait.evolve.drafts import Draft, drop_draft, keep_draft, list_drafts, read_draft

router = APIRouter(prefix="/drafts", tags=["graphs"])
State = Annotated[ServerState, Depends(get_state)]


class DraftIn(CheckedIn):
    """The graph as it is being edited, and the stored version the edits started from."""

    graph: dict[str, Any] = Field(
        description="The graph as an object with the fields of a graph file; any `id` is the draft's."
    )
    base_version: int | None = Field(
        default=None,
        ge=1,
        le=MAX_INT,
        description="The stored version the edits started from; leave it out for a graph never stored.",
    )


class DraftOut(BaseModel):
    """A kept draft and what is wrong with it (`valid` when it could be stored as it is)."""

    slug: str
    graph: dict[str, Any]
    base_version: int | None
    latest_version: int | None = Field(description="The graph's latest stored version; null for a new graph.")
    saved_at: float
    valid: bool
    errors: list[dict[str, Any]] = Field(description="As `POST /api/graphs/validate` reports them.")
    warnings: list[dict[str, Any]]


class DraftSummaryOut(BaseModel):
    """A draft as a list shows it."""

    slug: str
    name: str | None
    nodes: int
    base_version: int | None
    latest_version: int | None = Field(description="The graph's latest stored version; null for a new graph.")
    saved_at: float


def _out(draft: Draft) -> DraftOut:
    record = draft.record
    return DraftOut(
        slug=record.slug,
        graph=record.document,
        base_version=record.base_version,
        latest_version=draft.latest_version,
        saved_at=record.saved_at,
        **draft.check.to_json(),
    )


@router.get("", response_model=list[DraftSummaryOut])
def list_kept(state: State) -> list[DraftSummaryOut]:
    """Every draft, the most recently saved first."""
    return [DraftSummaryOut.model_validate(listing, from_attributes=True) for listing in list_drafts(state.store)]


@router.get("/{slug}", response_model=DraftOut)
def get(state: State, slug: str) -> DraftOut:
    """The draft of graph `slug`; 404 when it has none."""
    return _out(read_draft(state.store, slug))


@router.put("/{slug}", response_model=DraftOut)
def keep(state: State, slug: str, body: DraftIn) -> DraftOut:
    """Keep the draft of graph `slug`, replacing the earlier one, valid or not. A stored graph's
    draft names its `base_version` (409 without it); a new graph's names none (404 with it).
    System graphs have no drafts (403)."""
    return _out(keep_draft(state.store, slug, body.graph, body.base_version))


@router.delete("/{slug}", status_code=204, response_class=Response)
def discard(state: State, slug: str) -> Response:
    """Forget the draft of graph `slug` (stored, or discarded); 404 when it has none."""
    drop_draft(state.store, slug)
    return Response(status_code=204)
