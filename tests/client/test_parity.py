"""Every CLI command that reads or writes the store has a client method with the same meaning:
the table in docs/python.md names it, and both the blocking and the async client have it,
with the same parameters."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import typer

import plait
from plait.cli.app import app
from plait.client import AsyncClient, Client

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"
WITHOUT_STORE = {"plait serve", "plait worker", "plait config check"}
"""Commands that run a process or read plait.toml: the page says why they have no method."""
_ROW = re.compile(r"^\| `(plait [a-z -]+?)(?: --[a-z-]+)?` \| (.+) \|$", re.M)


def _commands(command: Any, path: str = "plait") -> list[str]:
    import click

    subcommands = getattr(command, "commands", None)
    if not subcommands:
        return [path]
    context = click.Context(command)
    return [name for sub in command.list_commands(context) for name in _commands(subcommands[sub], f"{path} {sub}")]


def _table() -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for command, methods in _ROW.findall(DOC.read_text(encoding="utf-8")):
        table.setdefault(command, []).extend(re.findall(r"`([\w.]+)", methods))
    return table


def _resolve(owner: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        owner = getattr(owner, part)
    return owner


def test_every_command_has_a_row_and_every_row_a_command() -> None:
    commands = set(_commands(typer.main.get_command(app)))
    assert len(commands) > 30, "the CLI was not enumerated"
    table = _table()
    assert commands - WITHOUT_STORE - set(table) == set(), "commands without a client method"
    assert set(table) - commands == set(), "rows for commands that do not exist"
    text = DOC.read_text(encoding="utf-8")
    assert all(f"`{command}`" in text for command in WITHOUT_STORE), "say why these have no method"


def test_every_method_in_the_table_exists_in_both_clients_with_the_same_parameters() -> None:
    blocking = Client(":memory:")
    asynchronous = AsyncClient(":memory:")
    try:
        for methods in _table().values():
            for name in methods:
                if not name.startswith("client."):  # plait.run, plait.validate, GraphBuilder.check
                    assert callable(_resolve(plait, name.removeprefix("plait."))), name
                    continue
                sync_method = _resolve(blocking, name.removeprefix("client."))
                async_method = _resolve(asynchronous, name.removeprefix("client."))
                assert inspect.iscoroutinefunction(async_method) or inspect.isasyncgenfunction(async_method), name
                assert not inspect.iscoroutinefunction(sync_method), name
                assert _parameters(sync_method) == _parameters(async_method), name
    finally:
        blocking.close()


def _parameters(method: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]
