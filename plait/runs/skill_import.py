"""A skill written in prose (Markdown with YAML front matter `name` and `description`, then its
instructions, as Claude Code skills are) turned into a stored skill graph by a model.

It goes through the chat designer's machinery: each round is a run of the `plait.designer`
system graph, answering with operations on a draft under the same schema; the patched draft is
compiled as a stored skill would be (stored skills expanded, no file read) and the compiler's
problems go back to the model, for at most `MAX_ROUNDS` rounds. Nothing is stored unless a draft
compiles; the parameters are the draft's `input_schema` properties (each field of the skill's
input is a parameter, mapped to itself).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from plait.compile.diagnostics import Category, Diagnostic
from plait.compile.files import GraphInvalid
from plait.compile.operations import apply_operations
from plait.compile.skill_params import SKILL_NAME
from plait.errors import PlaitError, Refusal
from plait.evolve.skills import SkillDraft, SkillError, add_skill, check_skill
from plait.model.enums import RunStatus
from plait.model.graph import GraphDef
from plait.runs._designer import DESIGNER, designer_input
from plait.runs.chat import MAX_ROUNDS
from plait.runs.start import start_run
from plait.store import Store, StoredGraph
from plait.store.skills import SkillRecord

MAX_MARKDOWN_CHARS = 20_000
"""What of a skill's prose goes into the designer's prompt (the rest is cut, and said to be)."""
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(?P<yaml>.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_NO_QUESTIONS = Diagnostic(
    Category.CONFIG,
    "no_questions",
    "nobody is there to answer questions while a skill is imported",
    hint="decide from the skill's text and propose operations; leave questions empty",
)


class SkillImportError(PlaitError):
    """The prose could not be made into a skill graph; nothing was stored."""

    kind = Refusal.INVALID
    code = "skill_import_failed"


@dataclass(frozen=True, slots=True)
class ProseSkill:
    """A skill as its Markdown says it: its name, what it is for, and its instructions."""

    name: str | None
    description: str | None
    instructions: str


@dataclass(frozen=True)
class ImportPorts:
    """What an import needs of the surface: how it drives a designer run to its end, the check
    a run must pass before it starts, the model selection runs record, and who stores it."""

    drive: Callable[[str], Awaitable[Any]]
    check_run: Callable[[StoredGraph], None] | None = None
    check_graph: Callable[[GraphDef], None] | None = None
    llm: dict[str, Any] | None = None
    by: str = "cli"
    on_round: Callable[[int, list[Diagnostic]], None] = field(default=lambda _round, _problems: None)
    """Told of each round as it starts, with the problems it is given to fix."""


@dataclass(frozen=True, slots=True)
class Imported:
    """The stored skill, and the designer runs it took."""

    skill: SkillRecord
    runs: list[str]


def read_prose(markdown: str) -> ProseSkill:
    """The front matter's `name` and `description`, and the text after it."""
    found = _FRONT_MATTER.match(markdown)
    if found is None:
        return ProseSkill(None, None, markdown.strip())
    try:
        meta = yaml.safe_load(found.group("yaml")) or {}
    except yaml.YAMLError as exc:
        raise SkillImportError(
            f"the front matter is not YAML: {str(exc).splitlines()[0]}",
            "write it as `key: value` lines between two `---` lines",
        ) from None
    if not isinstance(meta, dict):
        raise SkillImportError("the front matter must be `key: value` lines", "e.g. `name: summarize`")
    name, description = meta.get("name"), meta.get("description")
    return ProseSkill(
        str(name) if name is not None else None,
        str(description) if description is not None else None,
        markdown[found.end() :].strip(),
    )


def skill_name(prose: ProseSkill, name: str | None) -> str:
    """The name the skill is stored under: `name`, else the front matter's, made a name."""
    chosen = name or re.sub(r"[^A-Za-z0-9_-]+", "-", (prose.name or "").strip()).strip("-_")[:64]
    if not chosen or not SKILL_NAME.match(chosen):
        raise SkillError(
            f"'{chosen}' is not a skill name"
            if chosen
            else "the Markdown names no skill (no `name` in its front matter)",
            "give one with --name: letters, digits, '_' and '-', starting with a letter",
        )
    return chosen


def request_text(prose: ProseSkill, name: str) -> str:
    """What the designer is asked: the skill's text is data to turn into a graph."""
    text = prose.instructions
    if len(text) > MAX_MARKDOWN_CHARS:
        text = text[:MAX_MARKDOWN_CHARS] + "\n…(cut)"
    return (
        f"Turn the skill '{name}' below, written in prose, into a graph that does what it describes. "
        "Declare what the skill needs from its caller as the graph's input_schema (set_graph): each input "
        "field becomes a parameter of the skill. Connect the last node to END with a schema.\n"
        f"What it is for: {prose.description or '(not said)'}\n"
        f"Its instructions:\n<<<\n{text}\n>>>"
    )


async def import_skill(store: Store, markdown: str, ports: ImportPorts, *, name: str | None = None) -> Imported:
    """Design a skill graph from `markdown` in at most `MAX_ROUNDS` designer rounds and store it
    (version 1). SkillImportError, with the last problems, when no round gave a graph that
    compiles; a conflict before any model call when the name is taken."""
    prose = read_prose(markdown)
    chosen = skill_name(prose, name)
    if store.skills.find(chosen) is not None:
        raise SkillError(
            f"a skill named '{chosen}' exists already",
            "choose another name with --name, or delete it first (`plait skills delete NAME`)",
            kind=Refusal.CONFLICT,
            code="conflict",
        )
    document: dict[str, Any] = {"plait": 1, "id": chosen, "name": prose.name or chosen, "nodes": [], "edges": []}
    if prose.description:
        document["description"] = prose.description[:2000]
    request = request_text(prose, chosen)
    problems: list[Diagnostic] = []
    runs: list[str] = []
    for round_no in range(1, MAX_ROUNDS + 1):
        ports.on_round(round_no, problems)
        run_id = start_run(
            store,
            DESIGNER,
            designer_input(document, request=request, problems=problems, conversation="", context="(nothing named)"),
            files=False,
            check=ports.check_run,
            llm=ports.llm,
        )
        runs.append(run_id)
        await ports.drive(run_id)
        design = _designed(store, run_id)
        document, applied = apply_operations(document, design["operations"])
        problems = [*applied, *(_NO_QUESTIONS,) * bool(design["questions"])]
        draft = _draft(document, chosen, prose)
        problems += _check(store, draft, ports)
        if not problems:
            return Imported(
                add_skill(store, draft, by=ports.by, note=f"imported from prose in {round_no} rounds"), runs
            )
    raise SkillImportError(
        f"the model gave no skill graph that compiles in {MAX_ROUNDS} rounds; nothing was stored",
        "try a model that follows JSON schemas better (--llm), or write the skill as a graph file "
        "and store it with `plait skills add FILE`",
        [p.format() for p in problems],
    )


def _designed(store: Store, run_id: str) -> dict[str, Any]:
    run = store.runs.get(run_id)
    if run.status != RunStatus.COMPLETED or not isinstance(run.output, dict):
        reason = (run.error or {}).get("message") or f"it ended {run.status}"
        raise SkillImportError(
            f"the designer could not answer: {reason}; nothing was stored",
            f"`plait runs show {run_id}` shows every attempt",
        )
    return run.output


def _draft(document: dict[str, Any], name: str, prose: ProseSkill) -> SkillDraft:
    """The draft with one parameter per field of its input schema, each mapped to itself."""
    schema = document.get("input_schema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    required = set(schema.get("required") or []) if isinstance(schema, dict) else set()
    parameters = [
        {
            "name": field_name,
            "schema": field_schema,
            **(
                {"description": field_schema["description"]} if isinstance(field_schema.get("description"), str) else {}
            ),
            **({} if field_name in required else {"required": False}),
        }
        for field_name, field_schema in (properties.items() if isinstance(properties, dict) else [])
        if isinstance(field_schema, dict)
    ]
    return SkillDraft(document=document, name=name, description=prose.description, parameters=parameters)


def _check(store: Store, draft: SkillDraft, ports: ImportPorts) -> list[Diagnostic]:
    """What stops `draft` from being stored, as the compiler's diagnostics."""
    try:
        _, result = check_skill(store, draft)
    except GraphInvalid as exc:
        return list(exc.diagnostics)
    except SkillError as exc:
        return [
            Diagnostic(Category.CONFIG, "skill_invalid", line, hint=exc.hint) for line in exc.details or [exc.message]
        ]
    if ports.check_graph is not None and result.expanded is not None:
        try:
            ports.check_graph(result.expanded)
        except PlaitError as refused:
            hint = "Use only programs, MCP servers and models this process is configured with, or leave the node out."
            return [Diagnostic(Category.CONFIG, "not_executable", refused.message, hint=hint)]
    return []
