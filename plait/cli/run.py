"""`plait run` and `plait resume`: execute a run with a live view of node states on stderr.

stdout carries only the result (the run output JSON, or with --json the run summary),
so scripts can pipe it; the exit code says how it ended (0 done, 1 failed, 2 invalid, 3 paused).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_PAUSED,
    ConfigOption,
    DbOption,
    JsonOption,
    LlmOption,
    fail,
    open_store,
    parse_inputs,
    refuse,
    resolve_run,
)

QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")]
DryRunOption = Annotated[
    bool,
    typer.Option("--dry-run", help="Render every prompt with placeholder upstream data, check budgets; call no model."),
]
UpstreamOption = Annotated[
    Path | None,
    typer.Option("--upstream", help="With --dry-run: node outputs to render with (a JSON/YAML map node id -> output)."),
]
NoCacheOption = Annotated[
    bool, typer.Option("--no-cache", help="Call the model even when an identical request was answered before.")
]
CacheOption = Annotated[
    bool | None,
    typer.Option(
        "--cache/--no-cache",
        help="Answer model calls from the response cache when an identical request was answered before "
        "(default: yes; a node `rerun` names is always asked afresh unless --cache).",
    ),
]


def run_command(
    graph: Annotated[str, typer.Argument(help="A graph file, or the id/slug of a stored graph.")],
    inputs: Annotated[list[str], typer.Option("-i", "--input", help="Run input as key=value (repeatable).")] = [],  # noqa: B006
    input_file: Annotated[Path | None, typer.Option("--input-file", help="Run input from a JSON/YAML file.")] = None,
    db: DbOption = None,
    llm: LlmOption = None,
    config: ConfigOption = None,
    no_cache: NoCacheOption = False,
    dry_run: DryRunOption = False,
    upstream: UpstreamOption = None,
    json_output: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Run a graph: store it (a new version only if it changed), start a run, execute it."""
    from plait.engine.run_input import StartError
    from plait.runs.start import start_run

    run_input = parse_inputs(inputs, input_file)
    if dry_run:
        from plait.cli.dry_run import dry_run_command

        dry_run_command(graph, run_input, _provider(llm, config), db, json_output, upstream, config)
        return
    if upstream is not None:
        fail("--upstream only applies with --dry-run")
    from plait.engine.outcome import EngineError

    store = open_store(db)
    try:
        provider, selection = _chosen(llm, config)
        try:
            check = _executable(store, provider, config)
            run_id = start_run(store, graph, run_input, llm=selection, check=check)
        except StartError as exc:
            refuse(exc)
        except EngineError as exc:  # refused before the run exists: nothing is left behind
            fail(str(exc))
        _execute(store, provider, run_id, json_output, quiet, cache=not no_cache, config=config)
    finally:
        store.close()


def resume_command(
    run_id: Annotated[str, typer.Argument(help="The run to continue (its id, or a unique prefix of it).")],
    db: DbOption = None,
    llm: LlmOption = None,
    config: ConfigOption = None,
    cache: CacheOption = None,
    json_output: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Continue a run after a crash, a kill or a pause: completed nodes are never executed again.
    It executes on the run's own model unless --llm or --config names another (recorded on the run)."""
    store = open_store(db)
    try:
        run_id = resolve_run(store, run_id)
        provider = run_provider(store, run_id, llm, config, by="resume")
        _execute(store, provider, run_id, json_output, quiet, cache=cache is not False, config=config)
    finally:
        store.close()


def _provider(spec: str | None, config: str | None) -> Any:
    from plait.llm.select import LlmConfigError, provider_from_spec

    try:
        return provider_from_spec(spec, config)
    except LlmConfigError as exc:
        fail(str(exc))


def _chosen(spec: str | None, config: str | None) -> tuple[Any, Any]:
    """The provider for a new run, and the model selection to store with it."""
    from plait.llm.select import LlmConfigError
    from plait.runs.model_choice import chosen

    try:
        return chosen(spec, config)
    except LlmConfigError as exc:
        fail(str(exc))


def run_provider(store: Any, run_id: str, spec: str | None, config: str | None, *, by: str) -> Any:
    """The provider to execute an existing run with: the run's own model unless --llm/--config
    names another (then the change is recorded on the run, `by` the command)."""
    from plait.llm.select import LlmConfigError
    from plait.runs.model_choice import for_run

    try:
        return for_run(store, run_id, spec, config, by=by)
    except LlmConfigError as exc:
        fail(str(exc))


def _executable(store: Any, provider: Any, config: str | None) -> Any:
    """The engine's refusal check (node types, provider, MCP servers), run before the run row exists."""
    from plait.engine.runner import Engine

    return Engine(store, provider, mcp_servers=_mcp_servers(config)).check_executable


def _mcp_servers(config: str | None) -> Any:
    from plait.config import ConfigError, configured_servers

    try:
        return configured_servers(config)
    except ConfigError as exc:
        fail(str(exc))


def _execute(
    store: Any,
    provider: Any,
    run_id: str,
    json_output: bool,
    quiet: bool,
    *,
    cache: bool,
    config: str | None,
    show_output: bool = True,
) -> None:
    """Drive the run and report how it ended; `show_output=False` keeps the run output off stdout
    (a correction prints the corrected value there instead)."""
    from plait.cli import interrupt
    from plait.cli.live import LiveView
    from plait.cli.outcome import report_outcome
    from plait.engine.runner import Engine, EngineError
    from plait.model.enums import RunStatus
    from plait.runs.start import local_graphs

    engine = Engine(store, provider, cache=cache, mcp_servers=_mcp_servers(config), graphs=local_graphs(store))
    view = None if quiet else LiveView(store, run_id)
    if view is not None:
        engine.events.subscribe(view.on_event)

    try:
        if view is not None:
            with view:
                outcome = interrupt.run(engine.run(run_id), cleanup=engine.aclose)
        else:
            outcome = interrupt.run(engine.run(run_id), cleanup=engine.aclose)
    except EngineError as exc:
        fail(str(exc))
    except interrupt.Interrupted:
        sys.stderr.write(f"interrupted: resume with plait resume {run_id}\n")
        raise typer.Exit(interrupt.EXIT_INTERRUPTED) from None
    report_outcome(store, outcome, json_output, quiet, show_output=show_output)
    codes = {RunStatus.COMPLETED: EXIT_OK, RunStatus.PAUSED: EXIT_PAUSED}
    raise typer.Exit(codes.get(outcome.status, EXIT_FAILED))
