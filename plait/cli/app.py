"""The `plait` command. Exit codes (plait.cli.common): 0 done, 1 run failed, 2 invalid usage/graph, 3 paused.

Results go to stdout, diagnostics and progress to stderr. Commands import
their machinery lazily so that `plait validate` never loads the store, the
HTTP stack or provider SDKs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from typer.main import get_command_name
from typer.models import CommandInfo, TyperInfo

from plait import __version__
from plait.cli import config, evals, graphs, kb, memory, runs, schedules, skills, templates
from plait.cli import settings as settings_cli
from plait.cli.batch import batch_command
from plait.cli.chat import chat_command
from plait.cli.common import EXIT_FAILED, EXIT_INVALID, report_refusal
from plait.cli.corrections import override_command, rerun_command, review_command, rollback_command
from plait.cli.help import PlaitTyper
from plait.cli.replay import replay_command
from plait.cli.run import resume_command, run_command
from plait.cli.serve import serve_command, token_app
from plait.cli.worker import worker_command
from plait.errors import PlaitError

app = PlaitTyper(
    name="plait",
    help="Prompt graphs with typed edge contracts, recorded runs and human corrections.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(graphs.app, name="graphs")
app.add_typer(runs.app, name="runs")
app.add_typer(config.app, name="config")
app.add_typer(token_app, name="token")
app.add_typer(templates.app, name="templates")
app.add_typer(schedules.app, name="schedules")
app.add_typer(kb.app, name="kb")
app.add_typer(memory.app, name="memory")
app.add_typer(settings_cli.app, name="settings")
app.add_typer(evals.app, name="eval")
app.add_typer(skills.app, name="skills")
app.add_commands(
    {
        "run": run_command,
        "batch": batch_command,
        "worker": worker_command,
        "resume": resume_command,
        "replay": replay_command,
        "override": override_command,
        "rerun": rerun_command,
        "review": review_command,
        "rollback": rollback_command,
        "serve": serve_command,
        "chat": chat_command,
    }
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"plait {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Plait command-line interface."""


@app.command()
def validate(
    graph: Annotated[Path, typer.Argument(help="A graph file (.yaml/.yml/.json), or a folder of them.")],
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")] = False,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Where the prompt-script templates it names are looked up, and the stored schema versions its "
            "migrations may target (default: $PLAIT_DB, else the store found from here).",
        ),
    ] = None,
) -> None:
    """Check a graph file: fields, schemas, templates and structure. Exit 0 valid, 2 invalid."""
    from plait.cli.validate import run_validate

    raise typer.Exit(run_validate(graph, json_output, db))


def _named_only(argv: list[str]) -> tuple[list[TyperInfo], list[CommandInfo]]:
    """The registered groups and commands to build for `argv`: only the one it names, when it
    names one exactly. Typer turns every registered function into a click command on each
    start, a noticeable part of a short command's time, and one invocation needs one; anything else (no argument,
    `--help`, a typo) builds them all, so the top-level help and "No such command" list all."""
    every = app.registered_groups, app.registered_commands
    if len(argv) < 2:
        return every
    groups = [g for g in app.registered_groups if g.name == argv[1]]
    commands = [c for c in app.registered_commands if _name(c) == argv[1]]
    return (groups, commands) if groups or commands else every


def _name(command: CommandInfo) -> str | None:
    if command.name:
        return command.name
    return get_command_name(command.callback.__name__) if command.callback is not None else None


def main() -> None:
    """Entry point: never show a Python traceback for a user's mistake."""
    every = app.registered_groups, app.registered_commands
    app.registered_groups, app.registered_commands = _named_only(sys.argv)
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("plait: interrupted\n")
        sys.exit(130)
    except PlaitError as exc:  # a refusal no command words for its flags: still message, details, hint
        report_refusal(exc)
        sys.exit(EXIT_INVALID)
    except Exception as exc:  # a bug in plait, not a bad graph: keep it short unless asked
        if os.environ.get("PLAIT_DEBUG"):
            raise
        sys.stderr.write(
            f"plait: internal error: {type(exc).__name__}: {exc}\n"
            "  set PLAIT_DEBUG=1 to see the traceback, and please report it\n"
        )
        sys.exit(EXIT_FAILED)
    finally:
        app.registered_groups, app.registered_commands = every
