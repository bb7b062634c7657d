"""`plait skills list | show | add | update | delete | export | import`: stored skills
(docs/skills.md), the graphs a SKILL node names with `skill: NAME` or `skill: NAME@VERSION`.

A skill file is a graph file with an optional `skill:` block (name, description, category,
tags, parameters, input_mapping); `export` writes one back. `import` turns a skill written in
prose (Markdown) into a skill graph through a model, stored only once it compiles.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import fail, print_json, store_for, when
from plait.cli.help import PlaitTyper
from plait.cli.options import ConfigOption, DbOption, JsonOption, LlmOption, QuietOption

app = PlaitTyper(help="Stored skills: list, show, add, update, delete, export, import.", no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(help="The skill's name.")]
RefArg = Annotated[str, typer.Argument(help="The skill's name, or NAME@VERSION for one version.")]
FileArg = Annotated[Path, typer.Argument(help="A skill file: a graph file with an optional `skill:` block.")]
TagsOption = Annotated[str | None, typer.Option("--tags", help="Its tags, separated by commas.")]
CategoryOption = Annotated[str | None, typer.Option("--category", help="The category it is listed under.")]
DescriptionOption = Annotated[str | None, typer.Option("--description", help="What the skill does, in a sentence.")]
NoteOption = Annotated[str | None, typer.Option("--note", help="Why this version (shown in its history).")]
BY = "cli"


def _ref(ref: str) -> tuple[str, int | None]:
    from plait.compile.skill_params import skill_ref

    found = skill_ref(ref)
    if found is None:
        fail(f"'{ref}' is not a skill's name", "give NAME or NAME@VERSION (`plait skills list` shows the names)")
    return found


@app.command("list")
def list_command(
    tag: Annotated[str | None, typer.Option("--tag", help="Only skills with this tag.")] = None,
    category: CategoryOption = None,
    q: Annotated[str | None, typer.Option("--q", help="Only skills whose name or description holds this.")] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """The stored skills by name, each at its newest version."""
    with store_for(db) as store:
        found = store.skills.list(tag=tag, category=category, q=q)
    if json_output:
        print_json([s.summary() for s in found])
        return
    from rich.table import Table

    from plait.cli.common import print_table

    table = Table(title="skills")
    for column in ("name", "version", "category", "tags", "description"):
        table.add_column(column, no_wrap=column in ("name", "version"))
    for s in found:
        table.add_row(s.name, str(s.version), s.category, ", ".join(s.tags), (s.description or "").strip())
    print_table(table)


@app.command("show")
def show_command(ref: RefArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """A skill's parameters, nodes and versions (the newest, or NAME@VERSION)."""
    name, version = _ref(ref)
    with store_for(db) as store:
        found = store.skills.get(name, version)
    if json_output:
        print_json(found.as_json())
        return
    out = sys.stdout
    out.write(f"{found.ref}  [{found.category}]{'  tags: ' + ', '.join(found.tags) if found.tags else ''}\n")
    if found.description:
        out.write(f"  {found.description.strip()}\n")
    out.write("parameters:\n" if found.parameters else "parameters: none (its inputs pass as they are)\n")
    for p in found.parameters:
        default = f" = {p['default']!r}" if "default" in p else ""
        out.write(f"  {p['name']}{default}  {p.get('description') or ''}\n")
    for field, parameter in found.input_mapping.items():
        out.write(f"  input.{field} <- {parameter}\n")
    nodes = found.document.get("nodes") or []
    listed = [f"{n.get('id')} ({n.get('type')})" for n in nodes if isinstance(n, dict)]
    out.write(f"nodes: {', '.join(listed)}\n")
    out.write("versions:\n")
    for v in found.versions:
        out.write(f"  {v.version}  {when(v.created_at)}  {v.created_by}{'  ' + v.note if v.note else ''}\n")


def _draft(file: Path, name: str | None, tags: str | None, category: str | None, description: str | None) -> Any:
    """The skill file as a draft, with the command line's fields over its `skill:` block's."""
    from dataclasses import replace

    from plait.compile import GraphLoadError
    from plait.compile.source import read_source
    from plait.evolve.skills import draft_of

    if not file.is_file():
        fail(f"no such skill file: {file}", "give the path of a .yaml/.yml/.json graph file")
    try:
        draft = draft_of(read_source(file))
    except GraphLoadError as exc:
        for diag in exc.diagnostics:
            sys.stderr.write(diag.format() + "\n")
        fail(f"{file} cannot be read as a skill file: nothing stored")
    changes: dict[str, Any] = {"name": name, "category": category, "description": description}
    if tags is not None:
        changes["tags"] = [t.strip() for t in tags.split(",") if t.strip()]
    return replace(draft, **{k: v for k, v in changes.items() if v is not None})


def _stored(store: Any, file: Path, act: Any) -> Any:
    """`act()`, with a graph that does not compile reported as `plait validate` reports it."""
    from plait.compile import GraphInvalid

    try:
        return act()
    except GraphInvalid as exc:
        for diag in exc.diagnostics:
            sys.stderr.write(diag.format() + "\n")
        fail(f"{file} is not a valid skill graph: nothing stored", "fix every problem listed above")


def _report(record: Any, json_output: bool, what: str) -> None:
    if json_output:
        print_json(record.as_json())
    else:
        sys.stderr.write(f"skill {record.ref} {what}\n")


@app.command("add")
def add_command(
    file: FileArg,
    name: Annotated[str | None, typer.Option("--name", help="Its name (default: the file's, else its id).")] = None,
    tags: TagsOption = None,
    category: CategoryOption = None,
    description: DescriptionOption = None,
    note: NoteOption = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Store a skill file as a new skill (version 1), once it compiles."""
    from plait.evolve.skills import add_skill

    draft = _draft(file, name, tags, category, description)
    taken = "store a new version of it (`plait skills update NAME FILE`), or choose another name with --name"
    with store_for(db, taken) as store:
        record = _stored(store, file, lambda: add_skill(store, draft, by=BY, note=note))
    _report(record, json_output, "stored")


@app.command("update")
def update_command(
    name: NameArg,
    file: FileArg,
    tags: TagsOption = None,
    category: CategoryOption = None,
    description: DescriptionOption = None,
    note: NoteOption = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Store a skill file as a new version of skill NAME (graphs naming NAME@N keep version N)."""
    from plait.evolve.skills import update_skill

    draft = _draft(file, name, tags, category, description)
    with store_for(db) as store:
        record = _stored(store, file, lambda: update_skill(store, name, draft, by=BY, note=note))
    _report(record, json_output, "stored")


@app.command("delete")
def delete_command(name: NameArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """Delete a skill and its versions (graphs stored with it keep it: they hold its nodes)."""
    with store_for(db) as store:
        store.skills.delete(name)
    if json_output:
        print_json({"name": name, "deleted": True})
    else:
        sys.stderr.write(f"skill {name} deleted\n")


@app.command("export")
def export_command(
    ref: RefArg,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write it to this file (default: stdout).")
    ] = None,
    db: DbOption = None,
) -> None:
    """A skill version as a skill file (YAML), which `add` and `update` read back."""
    from plait.evolve.skills import export_skill

    name, version = _ref(ref)
    with store_for(db) as store:
        text = export_skill(store.skills.get(name, version))
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write --output {output}: {exc.strerror or exc}", "give a path in a folder you can write to")
    sys.stderr.write(f"wrote {output}\n")


@app.command("import")
def import_command(
    file: Annotated[Path, typer.Argument(help="A skill written in prose: Markdown with `name` and `description`.")],
    name: Annotated[str | None, typer.Option("--name", help="Its name (default: the front matter's).")] = None,
    db: DbOption = None,
    llm: LlmOption = None,
    config: ConfigOption = None,
    json_output: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Turn a Markdown skill into a skill graph with a model, stored only once it compiles."""
    from plait.cli import interrupt
    from plait.cli.common import refuse
    from plait.cli.drive import provider_from_options, session_for
    from plait.cli.options import Driving
    from plait.errors import PlaitError
    from plait.runs.model_choice import describe
    from plait.runs.skill_import import ImportPorts, import_skill

    markdown = _markdown(file)
    with store_for(db) as store:
        runs = session_for(store, provider_from_options(llm, config), Driving(llm, config, json_output, quiet))

        def told(round_no: int, problems: list[Any]) -> None:
            if not (quiet or json_output):
                fixing = f", fixing {len(problems)} problems" if problems else ""
                sys.stderr.write(f"round {round_no}{fixing}\n")

        ports = ImportPorts(
            drive=runs.finish,
            check_run=runs.check_executable,
            check_graph=runs.check_graph,
            llm=describe(llm, config),
            by=BY,
            on_round=told,
        )
        try:
            done = interrupt.run(import_skill(store, markdown, ports, name=name), cleanup=runs.aclose)
        except PlaitError as exc:
            refuse(exc)
        except interrupt.Interrupted:
            raise typer.Exit(interrupt.EXIT_INTERRUPTED) from None
    _report(done.skill, json_output, f"stored ({len(done.runs)} designer runs)")


def _markdown(file: Path) -> str:
    from plait.model.documents import DocumentError, read_limited

    try:
        return read_limited(file, "--file", max_bytes=1 << 20).decode("utf-8")
    except DocumentError as exc:
        fail(exc.message, exc.hint)
    except UnicodeDecodeError:
        fail(f"{file} is not UTF-8 text", "give a Markdown file")
