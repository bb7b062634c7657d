"""Graphs sent as content rather than as a file path (the HTTP API's create, update and import).

The content is validated exactly like a file (`compile_doc`: every check, all errors at once)
and stored through `save_graph`, like `plait graphs import`. What differs is what a graph
may reach: an uploaded graph has no folder, and the server must never read its own files on a
client's behalf, so SKILL nodes naming a skill file are refused; expand those skills first with
`plait graphs import FILE` on a machine that has them, or export and upload. A SKILL naming a
stored skill (`skill: name[@N]`) is expanded from the store, as it is everywhere.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from plait.compile import Category, CompileResult, Diagnostic, GraphInvalid, GraphLoadError, compile_doc
from plait.compile.context import VersionsFor
from plait.compile.skill_params import SkillSource, is_skill_file
from plait.compile.source import SourceDoc, check_values, parse_source
from plait.errors import PlaitError, Refusal
from plait.evolve.save import Saved, save_graph, versions_on_save
from plait.evolve.skills import skill_source
from plait.model import GraphDef
from plait.store import NotFoundError, Store


class UploadMode(StrEnum):
    """Whether an upload must create a graph, must update one, or may do either."""

    CREATE = "create"
    """A new graph: refused when the id is taken."""
    UPDATE = "update"
    """A new version of an existing graph: refused when it does not exist."""
    IMPORT = "import"
    """Either: a new graph, or a new version of the graph with that id (never a duplicate)."""


class UploadError(PlaitError):
    """The upload is refused; nothing was stored."""


def check_upload(
    source: str | dict[str, Any],
    *,
    as_json: bool = False,
    versions: VersionsFor | None = None,
    skills: SkillSource | None = None,
) -> CompileResult:
    """Every check of `plait validate` on `source` (YAML or JSON text, or already-parsed data):
    the errors (each with its line when `source` is text) and warnings; nothing is stored.
    `versions`: the schema versions a save would store (`versions_on_save`); `skills`: where
    stored skills come from (`skill_source`)."""
    try:
        doc = (
            parse_source(source, as_json=as_json)  # no file: nothing is looked up beside it
            if isinstance(source, str)
            else check_values(SourceDoc(data=source))  # what a parsed file is checked for
        )
    except GraphLoadError as exc:
        return CompileResult(file=None, errors=list(exc.diagnostics))
    files = _skill_files(doc)
    if files:
        return CompileResult(file=None, errors=files)
    return compile_doc(doc, versions=versions, skills=skills)


def compile_upload(
    source: str | dict[str, Any],
    *,
    as_json: bool = False,
    versions: VersionsFor | None = None,
    skills: SkillSource | None = None,
) -> GraphDef:
    """The validated graph in `source`; raises GraphInvalid with every problem."""
    result = check_upload(source, as_json=as_json, versions=versions, skills=skills)
    if not result.valid or result.expanded is None:
        raise GraphInvalid(result.errors)
    return result.expanded


def save_upload(
    store: Store,
    source: str | dict[str, Any],
    *,
    mode: UploadMode,
    ref: str | None = None,
    as_json: bool = False,
    base_version: int | None = None,
) -> Saved:
    """Validate and store an uploaded graph (a new version only when its content changed).

    `ref` (UPDATE): the id or slug of the graph being updated; the content's `id` must be
    its slug, or be left out (it is filled in). `base_version` (UPDATE): the version the edit
    started from; a save over a newer version is refused (`StaleVersion`)."""
    if mode == UploadMode.UPDATE:
        if ref is None:
            raise ValueError("an update names the graph it updates")
        return save_graph(store, update_of(store, ref, source, as_json=as_json), base_version=base_version)
    graph = compile_upload(source, as_json=as_json, versions=versions_on_save(store), skills=skill_source(store))
    if mode == UploadMode.CREATE and _exists(store, graph.id):
        raise UploadError(
            f"a graph with id '{graph.id}' exists already",
            "update it (a new version) instead, or choose another `id`",
        )
    return save_graph(store, graph)


def update_of(store: Store, ref: str, source: str | dict[str, Any], *, as_json: bool = False) -> GraphDef:
    """The compiled new content of the stored graph `ref`, whose `id` must be that graph's slug."""
    current = store.graphs.live(ref)  # NotFoundError: nothing to update
    if isinstance(source, dict) and "id" not in source:
        source = {**source, "id": current.slug}
    graph = compile_upload(source, as_json=as_json, versions=versions_on_save(store), skills=skill_source(store))
    if graph.id != current.slug:
        raise UploadError(
            f"the graph's id is '{graph.id}' but this updates '{current.slug}'",
            f"set `id: {current.slug}` in the content, or create a new graph instead",
            kind=Refusal.INVALID,
        )
    return graph


def _exists(store: Store, slug: str) -> bool:
    try:
        store.graphs.get(slug)
    except NotFoundError:
        return False
    return True


def _skill_files(doc: SourceDoc) -> list[Diagnostic]:
    nodes = doc.data.get("nodes") if isinstance(doc.data, dict) else None
    found: list[Diagnostic] = []
    for index, node in enumerate(nodes if isinstance(nodes, list) else []):
        skill = node.get("skill") if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get("type") == "SKILL" and isinstance(skill, str) and is_skill_file(skill):
            found.append(
                Diagnostic(
                    Category.CONFIG,
                    "skill_in_upload",
                    f"this SKILL names the skill file '{skill}', and an uploaded graph has no files to read",
                    node_id=str(node.get("id")) if node.get("id") is not None else None,
                    file=doc.file,
                    line=doc.line_of(("nodes", index, "type")),
                    hint="import the graph file with `plait graphs import FILE` (it inlines the skills), "
                    "or store the skill (`plait skills add FILE`) and name it: `skill: NAME`",
                )
            )
    return found
