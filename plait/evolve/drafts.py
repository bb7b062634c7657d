"""Drafts of graphs: edits kept on the server before they are stored as a version.

A person building a graph in the workbench goes through many invalid states (a node not yet
connected, a prompt not yet written, no nodes at all). Those states are kept as a draft, one
per graph id, so that they survive a reload and can be continued from another browser; each
read of a draft says what is still wrong with it. A draft never becomes a version by itself:
storing one goes through the same save as any graph, with every check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plait.compile import CompileResult
from plait.errors import PlaitError, Refusal
from plait.evolve.skills import skill_source
from plait.evolve.upload import check_upload
from plait.model.graph import SLUG_RULE, is_graph_slug
from plait.store import NotFoundError, Store
from plait.store.drafts import DraftRecord
from plait.store.records import StoredGraph


class DraftError(PlaitError):
    """A draft was refused; nothing was kept."""


@dataclass(frozen=True, slots=True)
class Draft:
    """A kept draft, what is wrong with it, and the graph's latest stored version (None when
    the graph was never stored: the draft is a new graph)."""

    record: DraftRecord
    check: CompileResult
    latest_version: int | None


@dataclass(frozen=True, slots=True)
class DraftListing:
    """A draft as a list shows it."""

    slug: str
    name: str | None
    nodes: int
    base_version: int | None
    saved_at: float
    latest_version: int | None


def keep_draft(store: Store, slug: str, document: dict[str, Any], base_version: int | None) -> Draft:
    """Keep `document` as the draft of the graph `slug`, valid or not.

    The draft of a stored graph names the version its edits started from (`base_version`);
    the draft of a new graph names none. System graphs are read-only: they have no drafts.
    """
    if not is_graph_slug(slug):
        raise DraftError(f"'{slug}' is not a graph id", hint=SLUG_RULE, kind=Refusal.INVALID)
    named = document.get("id", slug)
    if named != slug:
        raise DraftError(
            f"the draft's `id` is {named!r}, but it is kept as the draft of '{slug}'",
            hint=f"keep it as the draft of {named!r}, or set its `id` to '{slug}'",
            kind=Refusal.INVALID,
        )
    stored = _stored(store, slug)
    _check_base(slug, stored, base_version)
    record = store.drafts.keep(slug, {**document, "id": slug}, base_version)
    return Draft(
        record, check_upload(record.document, skills=skill_source(store)), stored.latest_version if stored else None
    )


def read_draft(store: Store, slug: str) -> Draft:
    """The draft of `slug`, with what is wrong with it; NotFoundError when it has none."""
    record = store.drafts.get(slug)
    if record is None:
        raise NotFoundError(
            f"graph '{slug}' has no draft",
            hint="edits are kept as a draft while a graph is edited in the workbench and not yet stored",
        )
    stored = _stored(store, slug)
    return Draft(
        record, check_upload(record.document, skills=skill_source(store)), stored.latest_version if stored else None
    )


def list_drafts(store: Store) -> list[DraftListing]:
    """Every draft, the most recently saved first."""
    latest = {listing.slug: listing.version for listing in store.graphs.list()}
    return [
        DraftListing(
            slug=record.slug,
            name=_text(record.document.get("name")),
            nodes=len(record.document.get("nodes") or []),
            base_version=record.base_version,
            saved_at=record.saved_at,
            latest_version=latest.get(record.slug),
        )
        for record in store.drafts.list()
    ]


def drop_draft(store: Store, slug: str) -> None:
    """Forget the draft of `slug` (its edits are stored, or discarded)."""
    if not store.drafts.drop(slug):
        raise NotFoundError(f"graph '{slug}' has no draft", hint="there is nothing to discard")


def _stored(store: Store, slug: str) -> StoredGraph | None:
    try:
        stored = store.graphs.get(slug)
    except NotFoundError:
        return None
    # A graph's UUID also finds it: a draft is kept under the id a person writes in the file.
    return stored if stored.slug == slug else None


def _check_base(slug: str, stored: StoredGraph | None, base_version: int | None) -> None:
    if stored is None:
        if base_version is not None:
            raise DraftError(
                f"no graph '{slug}' is stored, so its draft cannot start from version {base_version}",
                hint="leave `base_version` out for the draft of a new graph",
                kind=Refusal.NOT_FOUND,
            )
        return
    if stored.source_type == "system":
        raise DraftError(
            f"'{slug}' is a system graph: it is read-only and has no drafts",
            hint="fork it, and edit the fork",
            kind=Refusal.FORBIDDEN,
        )
    if base_version is None:
        raise DraftError(
            f"graph '{slug}' is stored (version {stored.latest_version}): "
            "its draft names the version its edits started from",
            hint="give `base_version`, the version the edits started from",
            kind=Refusal.CONFLICT,
        )
    if base_version > stored.latest_version:
        raise DraftError(
            f"graph '{slug}' has no version {base_version} (the latest is {stored.latest_version})",
            hint="give the version the edits started from as `base_version`",
            kind=Refusal.NOT_FOUND,
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
