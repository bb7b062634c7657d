"""`plait templates list | show | create | update | delete | preview | run`: prompt-script templates
(docs/prompt-scripts.md). System templates are read-only: `create ID --from plait.summary`
saves an edited copy as your own."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import fail, print_json, read_file_option, store_for, when
from plait.cli.help import PlaitTyper
from plait.cli.options import ConfigOption, DbOption, JsonOption, LlmOption

app = PlaitTyper(
    help="Prompt-script templates: list, show, create, update, delete, preview, run.", no_args_is_help=True
)

IdArg = Annotated[str, typer.Argument(help="The template id (e.g. plait.summary).")]
FileOption = Annotated[
    Path | None,
    typer.Option("--file", "-f", help="A file holding the script (JavaScript with `async function main()`)."),
]
SourceArg = Annotated[str | None, typer.Argument(help="A stored template (or give --file).")]
InputFileOption = Annotated[
    Path | None, typer.Option("--input-file", help="A run input (JSON or YAML) for getVar('input.…').")
]
RunOption = Annotated[str | None, typer.Option("--run", help="Run the script as --node of this run sees it.")]
NodeOption = Annotated[str | None, typer.Option("--node", help="The node of --run whose view the script gets.")]
CategoryOption = Annotated[str | None, typer.Option("--category", help="The category it is listed under.")]


def _code(file: Path | None) -> str | None:
    if file is None:
        return None
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read --file {file}: {exc}", "give a readable UTF-8 file holding the script")


@app.command("list")
def list_command(category: CategoryOption = None, db: DbOption = None, json_output: JsonOption = False) -> None:
    """The templates by category (system ones are read-only)."""
    with store_for(db) as store:
        found = store.templates.list(category=category)
    if json_output:
        print_json([{k: v for k, v in t.as_json().items() if k != "script_code"} for t in found])
        return
    from rich.table import Table

    from plait.cli.common import print_table

    table = Table(title="prompt-script templates")
    for column in ("id", "name", "category", "source", "updated"):
        table.add_column(column, no_wrap=column in ("id", "updated"))
    for t in found:
        source = "system (read-only)" if t.source_type == "system" else "user"
        table.add_row(t.id, t.name, t.category, source, when(t.updated_at))
    print_table(table)


@app.command("show")
def show_command(template_id: IdArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """A template's fields and its script."""
    with store_for(db) as store:
        found = store.templates.get(template_id)
    if json_output:
        print_json(found.as_json())
        return
    based = f" (based on {found.based_on_template_id})" if found.based_on_template_id else ""
    sys.stderr.write(f"{found.id}: {found.name} [{found.category}, {found.source_type}{based}]\n")
    if found.description:
        sys.stderr.write(f"  {found.description.strip()}\n")
    sys.stdout.write(found.script_code if found.script_code.endswith("\n") else found.script_code + "\n")


@app.command("create")
def create_command(
    template_id: IdArg,
    file: FileOption = None,
    base: Annotated[
        str | None, typer.Option("--from", help="Start from this template's script (and record it as the base).")
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="What it is called in lists (default: the id).")] = None,
    category: CategoryOption = None,
    description: Annotated[str | None, typer.Option("--description")] = None,
    schema_target: Annotated[str | None, typer.Option("--schema-target", help="The schema its answer follows.")] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Store a new user template: the script in --file, or a copy of --from's (both: --file wins,
    --from is recorded as its base)."""
    from plait.runs.template_edits import create_template

    code = _code(file)
    if code is None and base is None:
        fail("give the script with --file F, or start from a template with --from ID")
    with store_for(db) as store:
        created = create_template(store, template_id, code, base=base, name=name, category=category,
                                  description=description, schema_target=schema_target,
                                  what="the script in --file")  # fmt: skip
    if json_output:
        print_json(created.as_json())
    else:
        sys.stderr.write(f"template {created.id} created\n")


@app.command("update")
def update_command(
    template_id: IdArg,
    file: FileOption = None,
    name: Annotated[str | None, typer.Option("--name")] = None,
    category: CategoryOption = None,
    description: Annotated[str | None, typer.Option("--description")] = None,
    schema_target: Annotated[str | None, typer.Option("--schema-target")] = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Change a user template (a system template is read-only: `create ID --from` it)."""
    from plait.runs.template_edits import update_template

    code = _code(file)
    with store_for(db) as store:
        updated = update_template(store, template_id, script=code, name=name, category=category,
                                  description=description, schema_target=schema_target,
                                  what="the script in --file")  # fmt: skip
    if json_output:
        print_json(updated.as_json())
    else:
        sys.stderr.write(f"template {updated.id} updated\n")


@app.command("delete")
def delete_command(template_id: IdArg, db: DbOption = None, json_output: JsonOption = False) -> None:
    """Delete a user template (runs that named it keep reading it)."""
    with store_for(db) as store:
        deleted = store.templates.delete(template_id)
    if json_output:
        print_json(deleted.as_json())
    else:
        sys.stderr.write(f"template {deleted.id} deleted\n")


@app.command("preview")
def preview_command(
    template_id: SourceArg = None,
    file: FileOption = None,
    input_file: InputFileOption = None,
    run: RunOption = None,
    node: NodeOption = None,
    watch: Annotated[bool, typer.Option("--watch", help="Run again each time --file changes (Ctrl-C stops).")] = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Run a script once with the preview's limits (3 s soft, 5 s hard): its console on stderr as
    it happens, the prompt on stdout (exit 1 when the script fails)."""
    from plait.runs.templates import stored_script

    check_source(template_id, file, run, node)
    if watch and file is None:
        fail("--watch follows a --file as you edit it")
    with store_for(db) as store:
        if template_id is not None:
            code = stored_script(store, template_id).code
        host = script_host(store, run, node, input_file)
        if file is None:
            raise typer.Exit(_preview_once(code, host, json_output))
        if not watch:
            raise typer.Exit(_preview_once(_code(file) or "", host, json_output))
        _watch(file, host, json_output)


def check_source(template_id: str | None, file: Path | None, run: str | None, node: str | None) -> None:
    """The script and the view it gets, as the options name them, or a refusal saying how."""
    if (template_id is None) == (file is None):
        fail("give a stored template id, or the script with --file F (one of them)")
    if (run is None) != (node is None):
        fail("--run and --node go together: the node of the run whose view the script gets")


def script_host(store: Any, run: str | None, node: str | None, input_file: Path | None) -> Any:
    """The host a script run from the CLI gets: as --node of --run sees it, else --input-file."""
    from plait.runs.templates import script_host as host_of

    if run is not None and node is not None:
        from plait.cli.common import resolve_run

        return host_of(store, resolve_run(store, run), node, None)
    return host_of(store, None, None, read_file_option(input_file, "--input-file", "input") if input_file else {})


def _preview_once(code: str, host: Any, json_output: bool) -> int:
    from plait.runs.templates import preview

    def show(event: Any) -> None:
        if not json_output and event.type in ("log", "warning", "error") and event.level != "script":
            sys.stderr.write(f"[{event.level}] {' '.join(shown(a) for a in event.args)}\n")

    outcome = preview(code, host, on_event=show)
    if json_output:
        print_json(outcome.record())
    elif outcome.error is not None:
        sys.stderr.write(f"plait: the script failed ({outcome.error.kind}): {outcome.error}\n")
    else:
        sys.stdout.write(f"{outcome.prompt}\n")
        if outcome.dropped_console:
            sys.stderr.write(f"({outcome.dropped_console} console entries over the limit were dropped)\n")
    return 0 if outcome.error is None else 1


def shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _watch(file: Path, host: Any, json_output: bool) -> None:
    seen: float | None = None
    try:
        while True:
            changed = file.stat().st_mtime
            if changed != seen:
                seen = changed
                sys.stderr.write(f"--- {file} ({time.strftime('%H:%M:%S')})\n")
                _preview_once(_code(file) or "", host, json_output)
            time.sleep(0.3)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None


@app.command("run")
def run_command(
    template_id: SourceArg = None,
    file: FileOption = None,
    input_file: InputFileOption = None,
    run: RunOption = None,
    node: NodeOption = None,
    role: Annotated[str, typer.Option("--role", help="The model role (of plait.toml) to ask.")] = "chat",
    model: Annotated[str | None, typer.Option("--model", help="A model of the role's provider, by name.")] = None,
    schema_target: Annotated[
        str | None,
        typer.Option("--schema-target", help="Parse the answer as JSON against this schema (default: the template's)."),
    ] = None,
    llm: LlmOption = None,
    config: ConfigOption = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Run a script, send its prompt to the model and stream the answer on stdout (the console on
    stderr). Ctrl-C stops the model call; what arrived is kept. Exit 1 when a step fails, naming
    the step: script, preview, llm_request, http, stream or parse."""
    from plait.cli.templates_run import generate_once
    from plait.runs.templates import Script, stored_script

    check_source(template_id, file, run, node)
    with store_for(db) as store:
        script = stored_script(store, template_id) if template_id is not None else Script(_code(file) or "")
        host = script_host(store, run, node, input_file)
        raise typer.Exit(
            generate_once(script.code, host, role, model, script.target(schema_target), llm, config, json_output)
        )
