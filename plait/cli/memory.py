"""`plait memory show | correct | retract`: the facts a chat's memory keeps. A correction stores
a new fact in place of the old one, which is kept in its history and never recalled again."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from plait.cli.common import fail, print_json, print_table, store_for, when
from plait.cli.help import PlaitTyper
from plait.cli.options import DbOption, JsonOption

app = PlaitTyper(help="A chat's remembered facts: show, correct, retract.", no_args_is_help=True)
FactArg = Annotated[str, typer.Argument(help="The fact's id (`plait memory show` lists them).")]
NoteOption = Annotated[str | None, typer.Option("--note", help="Why (kept with the fact).")]
BY = "cli"


@app.command("show")
def show_command(
    scope: Annotated[
        str | None, typer.Argument(help="Whose memory, e.g. chat:<session id> (default: list the scopes).")
    ] = None,
    history: Annotated[bool, typer.Option("--history", help="Superseded and retracted facts too.")] = False,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """The active facts of a memory (with --history, the corrected and retracted ones too)."""
    from rich.table import Table

    with store_for(db) as store:
        if scope is None:
            scopes = store.memory.scopes()
            if json_output:
                print_json([{"scope": name, "facts": count} for name, count in scopes])
            elif not scopes:
                sys.stderr.write("no remembered facts yet\n")
            else:
                table = Table("scope", "facts")
                for name, count in scopes:
                    table.add_row(name, str(count))
                print_table(table)
            return
        facts = store.memory.facts(scope, history=history)
    if json_output:
        print_json([fact_json(f) for f in facts])
        return
    if not facts:
        sys.stderr.write(f"no facts in {scope}\n")
        return
    table = Table("id", "fact", "status", "since", "source")
    for f in facts:
        status = str(f.status) + (f" by {f.superseded_by[:8]}" if f.superseded_by else "")
        table.add_row(f.id[:8], f.text, status, when(f.created_at), _source(f.source))
    print_table(table)


@app.command("correct")
def correct_command(
    fact: FactArg,
    subject: Annotated[str | None, typer.Option("--subject", help="Who or what it is about.")] = None,
    predicate: Annotated[str | None, typer.Option("--predicate", help="The relation, e.g. 'lives in'.")] = None,
    object_: Annotated[str | None, typer.Option("--object", help="The value, e.g. 'Lyon'.")] = None,
    text: Annotated[str | None, typer.Option("--text", help="The sentence saying it.")] = None,
    note: NoteOption = None,
    db: DbOption = None,
    json_output: JsonOption = False,
) -> None:
    """Replace a fact with a corrected one (give at least one of --subject, --predicate, --object, --text)."""
    from plait.runs.memory import correct

    changes = {k: v for k, v in (("subject", subject), ("predicate", predicate), ("object", object_),
                                 ("text", text)) if v is not None}  # fmt: skip
    if not changes:
        fail("nothing to correct", "give --subject, --predicate, --object or --text")
    with store_for(db) as store:
        made = correct(store, _whole(store, fact), changes, by=BY, note=note)
    if json_output:
        print_json(fact_json(made))
        return
    sys.stderr.write(f"fact {made.supersedes} superseded by {made.id}: {made.text}\n")


@app.command("retract")
def retract_command(fact: FactArg, note: NoteOption = None, db: DbOption = None) -> None:
    """Mark a fact wrong, with nothing in its place: it is never recalled again."""
    from plait.runs.memory import retract

    with store_for(db) as store:
        gone = retract(store, _whole(store, fact), by=BY, note=note)
    sys.stderr.write(f"fact {gone.id} retracted: {gone.text}\n")


def _whole(store: Any, ref: str) -> str:
    """A fact's whole id from a unique prefix of it (as `show` prints them)."""
    from plait.store import NotFoundError

    try:
        return str(store.memory.get(ref).id)
    except NotFoundError:
        found = store.memory.with_prefix(ref)
        if len(found) == 1:
            return str(found[0])
        fail(f"no fact '{ref}'" if not found else f"'{ref}' names {len(found)} facts", "give more of its id")


def _source(source: dict[str, Any]) -> str:
    if "corrects" in source:
        return f"correction of {str(source['corrects'])[:8]}"
    messages = source.get("messages") or []
    return f"{len(messages)} messages" + (f", run {str(source['run_id'])[:8]}" if source.get("run_id") else "")


def fact_json(f: Any) -> dict[str, Any]:
    return {"id": f.id, "scope": f.scope, "subject": f.subject, "predicate": f.predicate, "object": f.object,
            "text": f.text, "valid_from": f.valid_from, "status": str(f.status), "supersedes": f.supersedes,
            "superseded_by": f.superseded_by, "source": f.source, "created_by": f.created_by, "note": f.note,
            "created_at": f.created_at}  # fmt: skip
