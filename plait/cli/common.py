"""What every command shares: exit codes, options, errors, JSON and table output, reading the
files and inputs given on the command line, and the store a command opens. Nothing here loads
the store or a model at import: `plait validate` and `plait runs list` start fast."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from plait.errors import PlaitError
    from plait.store import Store

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_PAUSED = 0, 1, 2, 3
"""How a command ended: done, the run failed, invalid usage or graph, the run paused."""
DB_HINT = "check --db or $PLAIT_DB"
STORED_GRAPH_HINT = "give a .yaml/.json path, or a stored graph id or slug (`plait graphs list`)"


def fail(message: str, hint: str | None = None, code: int = EXIT_INVALID, kind: str | None = None) -> NoReturn:
    """Print an error (and how to fix it) on stderr and exit; with --json, also as a JSON object on stdout
    (`kind` its code; by default `usage` for exit 2, `failed` otherwise)."""
    _report(message, hint, kind or ("usage" if code == EXIT_INVALID else "failed"))
    raise typer.Exit(code)


def _report(message: str, hint: str | None, code: str, details: list[str] | None = None) -> None:
    """An error on stderr (message, details indented, hint) and, with --json, on stdout as
    `{"error": {code, message, hint}}` (with `details` when given)."""
    sys.stderr.write(f"plait: {message}\n")
    for line in details or []:
        sys.stderr.write(f"  {line}\n")
    if hint:
        sys.stderr.write(f"  hint: {hint}\n")
    if json_requested():
        print_error_json(code, message, hint, **({"details": details} if details is not None else {}))


def json_requested() -> bool:
    """Whether the command line asks for JSON (a script then reads every answer, errors too, on stdout)."""
    args = sys.argv[1:]
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def print_error_json(code: str, message: str, hint: str | None, **extra: Any) -> None:
    """Print `{"error": {code, message, hint, ...extra}}` on stdout: how a `--json` caller reads an error."""
    print_json({"error": {"code": code, "message": message, "hint": hint, **extra}})


def refuse(exc: PlaitError) -> NoReturn:
    """Exit 2 with a `PlaitError`'s message, its details (indented) and its hint."""
    report_refusal(exc)
    raise typer.Exit(EXIT_INVALID)


def report_refusal(exc: PlaitError) -> None:
    """Print a `PlaitError` as every command does: message, details (indented) and hint on
    stderr; with --json, also `{"error": {code, message, hint, details}}` on stdout."""
    _report(exc.message, exc.hint, exc.code, list(exc.details))


def console() -> Any:
    """Rich console for tables on stdout. Piped, it is as wide as $COLUMNS says (160 when unset), and
    `print_table` widens it rather than cut an id: a script that greps an id must find it whole."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console()
    return Console(width=piped_width(), soft_wrap=True)  # lines whole (ids, commands); tables fit $COLUMNS


def piped_width() -> int:
    """The width of output that is not a terminal: `$COLUMNS` when it is a positive number, else 160."""
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else 160


def print_table(table: Any, out: Any = None) -> None:
    """Print a table; when piped, widened past $COLUMNS rather than cut a `no_wrap` column (ids, names,
    statuses, headers). A column with a `max_width` (a long value, cut with an ellipsis) gives way first."""
    out = out or console()
    if not out.is_terminal:
        kept, flexible = _widths(out, table)
        room = out.width - kept - sum(width + pad for width, pad in flexible.values())
        needed = kept
        for index, (least, pad) in flexible.items():  # share what is left between the long-value columns
            column = table.columns[index]
            column.max_width = max(least, min(column.max_width, least + room // len(flexible)))
            needed += column.max_width + pad
        if needed > out.width:
            out = type(out)(width=needed, soft_wrap=True)
    out.print(table)


def _widths(out: Any, table: Any) -> tuple[int, dict[int, tuple[int, int]]]:
    """The width the table needs for its columns kept whole (borders and padding included), and for each
    column that may be cut (`no_wrap` with a `max_width`) its least width and its padding."""
    from rich.measure import Measurement

    kept, flexible = len(table.columns) + 1 if table.box else 0, {}
    for index, column in enumerate(table.columns):
        measured = [Measurement.get(out, out.options, cell) for cell in (column.header, *column.cells)]
        padding = table._get_padding_width(index)
        if column.no_wrap and column.max_width is None:
            kept += max((m.maximum for m in measured), default=0) + padding
        elif column.no_wrap:
            flexible[index] = (len(str(column.header)), padding)
        else:
            kept += max((m.minimum for m in measured), default=0) + padding
    return int(kept), flexible


def print_json(value: Any) -> None:
    """Print `value` on stdout as indented JSON, non-ASCII kept as is and unknown types as their `str`."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def parse_inputs(pairs: list[str], input_file: Path | None) -> dict[str, Any]:
    """`--input-file` (JSON or YAML object) first, then `-i key=value` pairs; values are JSON when they parse.

    The whole input is checked against the limits of every stored value (depth, lone
    surrogates, NaN, overlong integers) here, so the error names the flag that brought it."""
    from plait.model.documents import DocumentError, check_document, json_or_text

    values: dict[str, Any] = {}
    if input_file is not None:
        data = read_file_option(input_file, "--input-file", "input")
        if not isinstance(data, dict):
            fail(f"input file {input_file} must hold an object (key: value pairs), not {type(data).__name__}")
        values.update(data)
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


def read_file_option(path: Path, flag: str, root: str) -> Any:
    """The JSON or YAML document in the file `flag` names, under the limits of every stored value
    (`root` names the value in its errors); exit 2 with the reader's message and hint, which
    name the flag, so a command line with several files says which one is wrong."""
    from plait.model.documents import DocumentError, read_document

    try:
        return read_document(path, f"{flag} {path}", root)
    except DocumentError as exc:
        fail(exc.message, exc.hint)


@contextmanager
def store_for(db: str | None, hint: str | None = None, *, kind: str | None = None) -> Iterator[Store]:
    """The store for one command, with the system graphs this Plait ships stored (a new version
    where changed), closed however the block ends. A store error the block lets through (an
    unknown id, a refusal) exits 2 with its message and `hint`: the store's messages are
    written for users, the hint says what to do on this command line."""
    from plait.evolve.system import open_store
    from plait.store import StoreError

    try:
        store = open_store(db)
    except StoreError as exc:
        fail(str(exc), DB_HINT)
    try:
        yield store
    except StoreError as exc:
        fail(str(exc), hint, kind=kind)
    finally:
        store.close()


def store_named(store: Store, db: str | None) -> str:
    """The store a command read, and why that one: a store found from the current folder may
    not be the one the person meant (another folder has its own `.plait/`)."""
    from plait.store.url import ENV_VAR

    if db or os.environ.get(ENV_VAR):
        return f"the store {store.display_url}"
    return (
        f"the store {store.display_url} (the nearest .plait/ folder from here, else your own; "
        f"--db or ${ENV_VAR} names another)"
    )


def when(ts: float | None) -> str:
    """A timestamp as tables show it (local time, to the second); empty when there is none."""
    import datetime as dt

    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else ""


def when_in(ts: float | None, zone: str) -> str:
    """A schedule's time as it fires: in the schedule's own zone, named (`2026-12-05 09:00:00
    Europe/Paris`), so that a reader in another zone or on a server in UTC is not misled."""
    if not ts:
        return ""
    import datetime as dt
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return f"{dt.datetime.fromtimestamp(ts, ZoneInfo(zone)).strftime('%Y-%m-%d %H:%M:%S')} {zone}"
    except (ZoneInfoNotFoundError, ValueError):
        return f"{dt.datetime.fromtimestamp(ts, dt.UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC"


def resolve_run(store: Any, ref: str) -> str:
    """The full id of the run `ref` names (an id or a unique prefix of one); exit 2 when none or several."""
    return _resolve(lambda: store.runs.resolve(ref))


def resolve_node_run(store: Any, ref: str) -> str:
    """The full id of the node run `ref` names (an id or a unique prefix of one); exit 2 when none or several."""
    return _resolve(lambda: store.runs.resolve_node_run(ref))


def _resolve(lookup: Any) -> str:
    from plait.store import StoreError
    from plait.store.prefix import MIN_PREFIX, AmbiguousIdError

    try:
        return str(lookup())
    except AmbiguousIdError as exc:
        sys.stderr.write(f"plait: {exc}\n")
        for candidate in exc.candidates:
            sys.stderr.write("  " + "  ".join(candidate) + "\n")
        if exc.more:
            sys.stderr.write("  …\n")
        if json_requested():
            ids = [c[0] for c in exc.candidates]
            print_error_json("ambiguous", str(exc), "give more characters of the id", candidates=ids)
        raise typer.Exit(EXIT_INVALID) from None
    except StoreError as exc:
        fail(str(exc), f"give a whole id, or a unique prefix of at least {MIN_PREFIX} characters", kind="not_found")
