"""Stored skills: checked before they are stored, and looked up when a graph names one.

A skill is a graph document with declared parameters and an input mapping. It is stored only
when it compiles on its own (its own stored skills expanded) and names no file: a stored skill
is read by servers and other machines, so nothing in it may point at a file of the machine that
compiles it. `skill_source(store)` is what every caller with a store hands the compiler, so a
SKILL node's `skill: name[@N]` is expanded from the store.

A skill file (`plait skills add FILE`) is a graph file with an optional `skill:` block:

    skill:
      name: summarize            # default: the graph's id
      description: Summarise a text in a few words.
      category: text
      tags: [summary]
      parameters:
        - {name: text, schema: {type: string}, description: the text to summarise}
        - {name: max_words, schema: {type: integer, minimum: 10}, default: 120}
      input_mapping: {document: text}   # the skill's input field <- a parameter

`export_skill` writes the same shape back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from plait.compile import Category, CompileResult, Diagnostic, GraphInvalid, GraphLoadError, compile_doc
from plait.compile.dump import dump_document
from plait.compile.skill_params import (
    SKILL_NAME,
    STORED_PREFIX,
    SkillSource,
    StoredSkill,
    check_mapping,
    is_skill_file,
    parse_parameters,
)
from plait.compile.source import SourceDoc, check_values
from plait.errors import PlaitError, Refusal
from plait.model.nodes import is_graph_file
from plait.store import Store
from plait.store.skills import SkillContent, SkillRecord

HEADER = "skill"
"""The block of a skill file that holds what is not the graph: name, parameters, mapping..."""
_HEADER_KEYS = frozenset({"name", "description", "category", "tags", "parameters", "input_mapping"})
MAX_TAGS = 20


class SkillError(PlaitError):
    """A skill was refused before anything was stored: its name, parameters or mapping."""

    kind = Refusal.INVALID
    code = "skill_invalid"


@dataclass(frozen=True)
class SkillDraft:
    """A skill as given (a file, an HTTP body): the graph document and what goes with it."""

    document: dict[str, Any]
    name: str | None = None
    description: str | None = None
    category: str | None = None
    tags: list[str] | None = None
    parameters: list[dict[str, Any]] = field(default_factory=list)
    input_mapping: dict[str, str] = field(default_factory=dict)
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)
    file: str | None = None

    def named(self, name: str | None) -> SkillDraft:
        """This draft under `name` (None: its own, else its graph's id)."""
        chosen = name or self.name or self.document.get("id")
        return replace(self, name=chosen if isinstance(chosen, str) else None)


def draft_of(doc: SourceDoc) -> SkillDraft:
    """A skill file's content split into the graph document and its `skill:` block."""
    data = doc.data
    if not isinstance(data, dict):
        raise SkillError("a skill file holds a graph (a mapping with `nodes`)", "see docs/skills.md")
    header = data.get(HEADER) or {}
    if not isinstance(header, dict):
        raise SkillError("the `skill:` block must be a mapping", "see docs/skills.md for its fields")
    unknown = sorted(set(header) - _HEADER_KEYS)
    if unknown:
        raise SkillError(
            f"the `skill:` block has unknown fields: {', '.join(map(str, unknown))}",
            f"its fields are: {', '.join(sorted(_HEADER_KEYS))}",
        )
    document = {k: v for k, v in data.items() if k != HEADER}
    return SkillDraft(
        document=document,
        name=_text(header, "name"),
        description=_text(header, "description"),
        category=_text(header, "category"),
        tags=header.get("tags"),
        parameters=header.get("parameters") or [],
        input_mapping=header.get("input_mapping") or {},
        lines=doc.lines,
        file=doc.file,
    )


def _text(header: dict[str, Any], key: str) -> str | None:
    value = header.get(key)
    if value is not None and not isinstance(value, str):
        raise SkillError(f"the `skill:` block's `{key}` must be text", "write it as a string")
    return value


def skill_source(store: Store) -> SkillSource:
    """How the compiler finds stored skills in `store` (None: no such skill or version)."""

    def find(name: str, version: int | None) -> StoredSkill | None:
        record = store.skills.find(name, version)
        return stored_skill(record) if record is not None else None

    return find


def stored_skill(record: SkillRecord) -> StoredSkill:
    """A stored version as the compiler expands it (its parameters were checked when stored)."""
    parameters, _ = parse_parameters(record.parameters)
    return StoredSkill(record.name, record.version, record.document, parameters, dict(record.input_mapping))


def check_skill(store: Store, draft: SkillDraft) -> tuple[SkillDraft, CompileResult]:
    """`draft` ready to store (its name and graph id set), and its compile result; SkillError for
    its name, parameters or mapping, GraphInvalid for its graph (every problem at once)."""
    draft = draft.named(None)  # its own name, else its graph's id
    name = draft.name
    if not isinstance(name, str) or not SKILL_NAME.match(name):
        raise SkillError(
            f"'{name}' is not a skill name" if name else "the skill has no name",
            "a name is letters, digits, '_' and '-' (64 at most), starting with a letter; "
            "give one with --name (or `name` in the `skill:` block)",
        )
    parameters, problems = parse_parameters(draft.parameters)
    problems += check_mapping(draft.input_mapping, parameters)
    problems += _tag_problems(draft.tags)
    if problems:
        raise SkillError(f"the skill '{name}' is not valid ({len(problems)} problems)", "fix each one", problems)
    document = {**draft.document, "id": draft.document.get("id") or name}
    ready = replace(draft, document=document)
    files = file_references(document)
    if files:
        raise GraphInvalid(files)
    try:
        doc = check_values(SourceDoc(data=document, file=draft.file, lines=draft.lines))
    except GraphLoadError as exc:
        raise GraphInvalid(list(exc.diagnostics)) from None
    result = compile_doc(doc, chain=(f"{STORED_PREFIX}{name}@new",), skills=skill_source(store))
    if not result.valid or result.expanded is None:
        raise GraphInvalid(result.errors)
    return ready, result


def _tag_problems(tags: Any) -> list[str]:
    if tags is None:
        return []
    if not isinstance(tags, list) or not all(isinstance(t, str) and 0 < len(t) <= 64 for t in tags):
        return ["`tags` must be a list of short texts (64 characters at most each)"]
    return [f"a skill has at most {MAX_TAGS} tags"] if len(tags) > MAX_TAGS else []


def add_skill(store: Store, draft: SkillDraft, *, by: str, note: str | None = None) -> SkillRecord:
    """Store a new skill at version 1 (a conflict when its name is taken), once it compiles."""
    ready, _ = check_skill(store, draft)
    assert ready.name is not None
    return store.skills.create(
        ready.name,
        _content(ready, by, note),
        description=ready.description,
        category=ready.category or "general",
        tags=ready.tags,
    )


def update_skill(store: Store, name: str, draft: SkillDraft, *, by: str, note: str | None = None) -> SkillRecord:
    """Store a new version of skill `name`, once it compiles; the fields given replace the skill's."""
    store.skills.get(name)  # NotFoundError: nothing to update
    ready, _ = check_skill(store, draft.named(name))
    return store.skills.add_version(
        name, _content(ready, by, note), description=ready.description, category=ready.category, tags=ready.tags
    )


def _content(draft: SkillDraft, by: str, note: str | None) -> SkillContent:
    parameters, _ = parse_parameters(draft.parameters)
    return SkillContent(
        document=draft.document,
        parameters=[p.as_json() for p in parameters],
        input_mapping=dict(draft.input_mapping),
        created_by=by,
        note=note,
    )


def export_data(record: SkillRecord) -> dict[str, Any]:
    """A stored version as a skill file's data: its `skill:` block, then the graph."""
    header: dict[str, Any] = {"name": record.name}
    if record.description:
        header["description"] = record.description
    header["category"] = record.category
    if record.tags:
        header["tags"] = list(record.tags)
    if record.parameters:
        header["parameters"] = list(record.parameters)
    if record.input_mapping:
        header["input_mapping"] = dict(record.input_mapping)
    document = dict(record.document)
    first: dict[str, Any] = {k: document.pop(k) for k in ("plait", "id") if k in document}
    return {**first, HEADER: header, **document}


def export_skill(record: SkillRecord) -> str:
    """A stored version as skill-file YAML, which `plait skills add` and `update` read back."""
    return dump_document(export_data(record))


def file_references(document: dict[str, Any], where: tuple[str, ...] = ()) -> list[Diagnostic]:
    """Every place a skill's graph names a file (a skill file, a child graph file), inline bodies
    included: a stored skill is compiled where those files are not."""
    found: list[Diagnostic] = []
    nodes = document.get("nodes")
    for node in nodes if isinstance(nodes, list) else []:
        if not isinstance(node, dict):
            continue
        node_id = ".".join((*where, str(node.get("id"))))
        skill, graph, body = node.get("skill"), node.get("graph"), node.get("body")
        if node.get("type") == "SKILL" and isinstance(skill, str) and is_skill_file(skill):
            found.append(_file_problem(node_id, f"the skill file '{skill}'", "store that skill too and name it"))
        if isinstance(graph, str) and is_graph_file(graph):
            found.append(_file_problem(node_id, f"the graph file '{graph}'", "inline the child graph as `body:`"))
        if isinstance(body, dict):
            found += file_references(body, (*where, str(node.get("id"))))
    return found


def _file_problem(node_id: str, what: str, fix: str) -> Diagnostic:
    return Diagnostic(
        Category.CONFIG,
        "file_in_skill",
        f"a stored skill cannot name {what}: it is compiled where that file is not",
        node_id=node_id,
        hint=f"{fix} (`plait skills add FILE`)",
    )
