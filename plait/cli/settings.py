"""`plait settings history | revert`: the changes made to the settings while the server runs
(plait.toml with an overlay kept in the store; `plait config show` shows the result)."""

from __future__ import annotations

from typing import Annotated

import typer

from plait.cli.common import print_json, print_table, store_for, when
from plait.cli.help import PlaitTyper
from plait.cli.options import ConfigOption, DbOption, JsonOption

app = PlaitTyper(help="Changes made to the settings while the server runs: history, revert.", no_args_is_help=True)
BY = "cli"


@app.command("history")
def history_command(
    db: DbOption = None,
    json_output: JsonOption = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many changes, newest first.")] = 50,
) -> None:
    """The changes, newest first: who, when, why, and each key before and after."""
    from rich.markup import escape
    from rich.table import Table

    from plait.runs.settings import history
    from plait.runs.settings_view import history_view

    with store_for(db) as store:
        entries = history(store, limit)
    if json_output:
        print_json([history_view(entry) for entry in entries])
        return
    table = Table("rev", "when", "by", "changes", "note")
    for entry in entries:
        changed = "\n".join(f"{c['key']}: {_shown(c['old'])} -> {_shown(c['new'])}" for c in entry.changes)
        note = (entry.note or "") + (f" (reverts {entry.reverts})" if entry.reverts else "")
        table.add_row(str(entry.revision), when(entry.at), entry.by, escape(changed), escape(note))
    print_table(table)


@app.command("revert")
def revert_command(
    revision: Annotated[int, typer.Argument(help="The change to undo (`plait settings history` lists them).")],
    note: Annotated[str | None, typer.Option("--note", help="Why (kept with the change).")] = None,
    config: ConfigOption = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Undo one change: the keys it set go back to what they were before it; recorded as a new change."""
    from plait.runs.settings import revert
    from plait.runs.settings_view import settings_view

    with store_for(db) as store:
        found = revert(store, config, revision, by=BY, note=note)
    if json_output:
        print_json(settings_view(found))
    else:
        typer.echo(f"reverted revision {revision}: the settings are at revision {found.revision}")


@app.command("set")
def set_command(
    key: Annotated[
        str, typer.Argument(help="A dotted key, e.g. roles.chat, providers.ID.rpm, context.history_tokens.")
    ],
    value: Annotated[str, typer.Argument(help="Its new value, as JSON (a bare word is a string; null: plait.toml's).")],
    note: Annotated[str | None, typer.Option("--note", help="Why (kept with the change).")] = None,
    base_revision: Annotated[
        int | None,
        typer.Option(
            "--base-revision", help="The revision the change is made on (default: the newest; stale: refused)."
        ),
    ] = None,
    config: ConfigOption = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Change one setting, checked as plait.toml is; servers and workers take it up without a restart."""
    from plait.runs.settings import change
    from plait.runs.settings_view import settings_view

    with store_for(db) as store:
        revision = base_revision if base_revision is not None else store.settings_changes.revision()
        found = change(store, config, patch_of(key, value), by=BY, base_revision=revision, note=note)
    if json_output:
        print_json(settings_view(found))
    else:
        typer.echo(f"{key} changed: the settings are at revision {found.revision}")


def patch_of(key: str, value: str) -> dict[str, object]:
    """`roles.chat` and `["a/m"]` as the patch `{"roles": {"chat": ["a/m"]}}`."""
    import json

    try:
        parsed: object = json.loads(value)
    except ValueError:
        parsed = value
    parts = key.split(".")
    if len(parts) > 3 and parts[0] == "providers":  # a provider id with dots in it
        parts = [parts[0], ".".join(parts[1:-1]), parts[-1]]
    patch: object = parsed
    for part in reversed(parts):
        patch = {part: patch}
    assert isinstance(patch, dict)
    return patch


def _shown(value: object) -> str:
    """A key's value in a change; None: the settings did not set it, so plait.toml's applied (as
    the workbench's history says it)."""
    return "plait.toml's" if value is None else str(value)
