"""The options several commands share, and the one set every command that executes a run
takes: declared once here, so `--llm` or `--cache` means the same on `run`, `resume`,
`override`, `rerun` and `review`, with the same help."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import typer

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database URL (sqlite:///… or postgresql://…); default $PLAIT_DB, else .plait/plait.db in the "
        "nearest folder from here up that has a .plait/ folder, else ~/.local/share/plait/plait.db",
    ),
]
LlmOption = Annotated[
    str | None,
    typer.Option(
        "--llm",
        help="Model provider: local (the embedded model, Gemma 3 270M, the default when installed) "
        "or scripted:FILE (deterministic responses).",
    ),
]
ConfigOption = Annotated[
    str | None,
    typer.Option("--config", help="Providers and roles: a plait.toml (default: $PLAIT_CONFIG, else ./plait.toml)."),
]
QueueOption = Annotated[
    str | None,
    typer.Option(
        "--queue",
        help="Hand runs to `plait worker`s through this broker (redis://HOST:6379/0); default: the broker of "
        "plait.toml's workers table; `none`: execute here.",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")]
CacheOption = Annotated[
    bool | None,
    typer.Option(
        "--cache/--no-cache",
        help="Answer model calls from the response cache when an identical request was answered before "
        "(default: yes; a node `rerun` names is always asked afresh unless --cache).",
    ),
]


@dataclass(frozen=True, slots=True)
class Driving:
    """The options of a command that executes a run: the model (--llm, --config), --json,
    --quiet, and whether the response cache may answer (not with --no-cache)."""

    llm: str | None
    config: str | None
    json_output: bool
    quiet: bool
    cache: bool = True
    cache_given: bool | None = None
    """What --cache/--no-cache said (None: neither), for a command whose default differs."""
    stream: tuple[str, ...] | bool = False
    """--stream (every node) or --stream-node (those named): answers printed as they arrive."""


_DRIVING = (
    ("llm", LlmOption, None),
    ("config", ConfigOption, None),
    ("cache", CacheOption, None),
    ("json_output", JsonOption, False),
    ("quiet", QuietOption, False),
)
"""The options `drives_a_run` adds, in the order `--help` lists them."""


def drives_a_run(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with the options of a command that executes a run (--llm, --config,
    --cache/--no-cache, --json, --quiet) added to its signature; it receives them as one
    `how: Driving` argument. Typer reads the signature, so the options appear in `--help` and
    are parsed like any other."""
    declared = inspect.signature(command, eval_str=True)
    kept = [p for p in declared.parameters.values() if p.name != "how"]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
        for name, annotation, default in _DRIVING
    ]

    @functools.wraps(command)
    def with_options(**given: Any) -> None:
        llm, config, cache, json_output, quiet = (given.pop(name) for name, _, _ in _DRIVING)
        command(**given, how=Driving(llm, config, json_output, quiet, cache=cache is not False, cache_given=cache))

    signature = declared.replace(parameters=[*kept, *added])
    with_options.__signature__ = signature  # type: ignore[attr-defined]
    with_options.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    return with_options
