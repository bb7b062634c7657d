"""Helpers shared by the commands that use the store: options, input parsing, JSON output, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_PAUSED = 0, 1, 2, 3

DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Database URL (sqlite:///… or postgresql://…); default $PLAIT_DB or ./.plait/plait.db"),
]
LlmOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="Model provider: local (the embedded SmolLM2 model, the default when installed) "
        "or scripted:FILE (deterministic responses).",
    ),
]
ConfigOption = Annotated[
    str | None,
    typer.Option("--config", help="Providers and roles: a plait.toml (default: $PLAIT_CONFIG, else ./plait.toml)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]


def fail(message: str, hint: str | None = None, code: int = EXIT_INVALID) -> NoReturn:
    """Print an error (and how to fix it) on stderr and exit."""
    sys.stderr.write(f"plait: {message}\n")
    if hint:
        sys.stderr.write(f"  hint: {hint}\n")
    raise typer.Exit(code)


def refuse(exc: Any) -> NoReturn:
    """Exit 2 with a `PlaitError`'s message, its details (indented) and its hint."""
    for line in exc.details:
        sys.stderr.write(f"  {line}\n")
    fail(exc.message, exc.hint)


def console() -> Any:
    """Rich console for tables on stdout; when piped (no terminal to size), wide enough not to collapse."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=160)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def parse_inputs(pairs: list[str], input_file: Path | None) -> dict[str, Any]:
    """`--input-file` (JSON or YAML object) first, then `-i key=value` pairs; values are JSON when they parse.

    The whole input is checked against the limits of every stored value (depth, lone
    surrogates, NaN, overlong integers) here, so the error names the flag that brought it."""
    from plait.model.documents import DocumentError, check_document, json_or_text

    values: dict[str, Any] = {}
    if input_file is not None:
        values.update(_read_input_file(input_file))
    try:
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            if not sep or not key:
                fail(f"bad input '{pair}'", "write -i key=value (the value may be JSON: -i n=3 -i tags='[\"a\"]')")
            values[key] = json_or_text(raw, f"-i {key}=…")
        check_document(values, "the run input (-i / --input-file)", "input")
    except DocumentError as exc:
        fail(exc.message, exc.hint)
    return values


def _read_input_file(path: Path) -> dict[str, Any]:
    from plait.model.documents import DocumentError, read_document

    try:
        data = read_document(path, f"--input-file {path}", "input")
    except DocumentError as exc:
        fail(exc.message, exc.hint)
    if not isinstance(data, dict):
        fail(f"input file {path} must hold an object (key: value pairs), not {type(data).__name__}")
    return data


def open_store(db: str | None) -> Any:
    """The store, with the system graphs this Plait ships stored (a new version where changed)."""
    from plait.evolve.system import open_store as open_synced
    from plait.store import StoreError

    try:
        return open_synced(db)
    except StoreError as exc:
        fail(str(exc), "check --db or $PLAIT_DB")
