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
    print_json,
    refuse,
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
    from plait.engine.start import StartError, start_run

    run_input = parse_inputs(inputs, input_file)
    if dry_run:
        from plait.cli.dry_run import dry_run_command

        dry_run_command(graph, run_input, _provider(llm, config), db, json_output, upstream)
        return
    if upstream is not None:
        fail("--upstream only applies with --dry-run")
    store = open_store(db)
    try:
        provider = _provider(llm, config)
        try:
            run_id = start_run(store, graph, run_input)
        except StartError as exc:
            refuse(exc)
        _execute(store, provider, run_id, json_output, quiet, cache=not no_cache, config=config)
    finally:
        store.close()


def resume_command(
    run_id: Annotated[str, typer.Argument(help="The run to continue.")],
    db: DbOption = None,
    llm: LlmOption = None,
    config: ConfigOption = None,
    no_cache: NoCacheOption = False,
    json_output: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Continue a run after a crash, a kill or a pause: completed nodes are never executed again."""
    from plait.store import StoreError

    store = open_store(db)
    try:
        try:
            store.runs.get(run_id)
        except StoreError as exc:
            fail(str(exc), "list runs with `plait runs list`")
        _execute(store, _provider(llm, config), run_id, json_output, quiet, cache=not no_cache, config=config)
    finally:
        store.close()


def _provider(spec: str | None, config: str | None) -> Any:
    from plait.llm.select import LlmConfigError, provider_from_spec

    try:
        return provider_from_spec(spec, config)
    except LlmConfigError as exc:
        fail(str(exc))


def _mcp_servers(config: str | None) -> Any:
    from plait.llm.config import ConfigError
    from plait.tools.mcp_config import configured_servers

    try:
        return configured_servers(config)
    except ConfigError as exc:
        fail(str(exc))


def _execute(
    store: Any, provider: Any, run_id: str, json_output: bool, quiet: bool, *, cache: bool, config: str | None
) -> None:
    from plait.cli.live import LiveView
    from plait.engine import eventloop
    from plait.engine.runner import Engine, EngineError
    from plait.store import RunStatus

    engine = Engine(store, provider, cache=cache, mcp_servers=_mcp_servers(config))
    view = None if quiet else LiveView(store, run_id)
    if view is not None:
        engine.events.subscribe(view.on_event)

    async def go() -> Any:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    try:
        if view is not None:
            with view:
                outcome = eventloop.run(go())
        else:
            outcome = eventloop.run(go())
    except EngineError as exc:
        fail(str(exc))
    if json_output:
        print_json(
            {"run_id": outcome.run_id, "status": str(outcome.status), "output": outcome.output, "error": outcome.error}
        )
    elif outcome.status == RunStatus.COMPLETED:
        print_json(outcome.output)
    _summary(store, outcome, quiet)
    codes = {RunStatus.COMPLETED: EXIT_OK, RunStatus.PAUSED: EXIT_PAUSED}
    raise typer.Exit(codes.get(outcome.status, EXIT_FAILED))


def _summary(store: Any, outcome: Any, quiet: bool) -> None:
    from plait.store import RunStatus

    if outcome.status == RunStatus.PAUSED:
        waiting = [r.node_id for r in store.runs.node_runs(outcome.run_id) if r.status == "pending"]
        sys.stderr.write(
            f"run {outcome.run_id} paused: waiting for a person at {', '.join(waiting)}\n"
            f"  hint: see it with `plait runs show {outcome.run_id}`\n"
        )
    elif outcome.status == RunStatus.FAILED:
        error = outcome.error or {}
        sys.stderr.write(
            f"run {outcome.run_id} failed: {error.get('message', 'a node failed')}\n"
            f"  hint: `plait runs show {outcome.run_id}` shows the node's attempts and errors\n"
        )
    elif not quiet:
        sys.stderr.write(f"run {outcome.run_id} completed\n")
