"""How `--help` names arguments and options: a flag shows no value, an argument its NAME.

Typer's help labels every option with its Python type (`--json <bool>`, `--input <list[str]>`)
and writes a required argument as `{graph}`, which reads as if flags took values and the
argument were a set of choices. The command classes here give every parameter without an
explicit metavar one that says what to type: nothing for a flag, `GRAPH` for an argument,
`TEXT`, `INTEGER` or `PATH` for an option's value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args, get_origin

import typer
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption
from typer.models import CommandFunctionType

_TYPE_NAMES = {int: "INTEGER", float: "NUMBER"}


def _plain_metavars(params: list[Any]) -> list[Any]:
    for param in params:
        if param.metavar is not None:
            continue
        if isinstance(param, TyperOption) and (param.is_flag or param.count):
            param.metavar = ""
        elif isinstance(param, TyperArgument):
            param.metavar = (param.name or "value").upper()
        elif isinstance(param, TyperOption):
            param.metavar = _value_name(param)
    return params


def _value_name(option: TyperOption) -> str:
    descriptor = option.type_descriptor
    if descriptor.is_path:
        return "PATH"
    annotation: Any = descriptor.annotation
    if get_origin(annotation) is list:
        (annotation,) = get_args(annotation)
    return _TYPE_NAMES.get(annotation, "TEXT")


def _usage(command: Any, ctx: Any) -> list[str]:
    """`[OPTIONS] GRAPH [MORE]`: click's usage notation, without Typer's braces."""
    pieces = [command.options_metavar] if command.options_metavar else []
    for param in command.get_params(ctx):
        if isinstance(param, TyperArgument):
            name = str(param.metavar) + ("..." if param.nargs != 1 else "")
            pieces.append(name if param.required else f"[{name}]")
    return pieces


def _usage_error_as_json(exc: UsageError) -> None:
    """With --json a script reads stdout only: the usage error goes there too, as a JSON object
    (Typer still prints its own box on stderr for a person)."""
    from plait.cli.common import json_requested, print_error_json

    if json_requested() and not isinstance(exc, NoArgsIsHelpError):
        path = exc.ctx.command_path if exc.ctx is not None else "plait"
        print_error_json("usage", exc.format_message(), f"`{path} --help` lists its arguments and options")


class _PlaitHelp:
    """What commands and groups share: JSON usage errors under `--json`, plain metavars."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return list(super().parse_args(ctx, args))  # type: ignore[misc]
        except UsageError as exc:
            _usage_error_as_json(exc)
            raise

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_metavars(super().get_params(ctx))  # type: ignore[misc]


class PlaitCommand(_PlaitHelp, TyperCommand):
    """A command whose help shows plain metavars and whose usage errors are JSON too under `--json`."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return _usage(self, ctx)


class PlaitGroup(_PlaitHelp, TyperGroup):
    """A command group like `PlaitCommand`; an unknown subcommand is a usage error reported the same way."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return super().resolve_command(ctx, args)
        except UsageError as exc:
            _usage_error_as_json(exc)
            raise

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [*_usage(self, ctx), self.subcommand_metavar or "COMMAND [ARGS]..."]


class PlaitTyper(typer.Typer):
    """A `typer.Typer` whose groups and commands use the classes above."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", PlaitGroup)
        super().__init__(**kwargs)

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[CommandFunctionType], CommandFunctionType]:
        kwargs.setdefault("cls", PlaitCommand)
        return super().command(name, **kwargs)

    def add_commands(self, commands: dict[str, Callable[..., Any]]) -> None:
        """Register each function under its command name, in the order `--help` lists them."""
        for name, function in commands.items():
            self.command(name)(function)
