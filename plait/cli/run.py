"""`plait run` and `plait resume`: execute a run with a live view of node states on stderr.

stdout carries only the result (the run output JSON, or with --json the run summary),
so scripts can pipe it; the exit code says how it ended (0 done, 1 failed, 2 invalid, 3 paused).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import fail, parse_inputs, refuse, resolve_run, store_for
from plait.cli.options import (
    ConfigOption,
    DbOption,
    Driving,
    JsonOption,
    LlmOption,
    QueueOption,
    QuietOption,
    drives_a_run,
)

DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Render every prompt with placeholder upstream data and make the checks a run makes before calling a "
        "model (pre-check, budget, roles); call no model. Exit 2 when one fails.",
    ),
]
UpstreamOption = Annotated[
    Path | None,
    typer.Option("--upstream", help="With --dry-run: node outputs to render with (a JSON/YAML map node id -> output)."),
]
StreamOption = Annotated[
    bool,
    typer.Option(
        "--stream",
        help="Print every model answer on stderr as it arrives (stdout still gets only the result).",
    ),
]
StreamNodeOption = Annotated[
    list[str],
    typer.Option(
        "--stream-node",
        help="Print this node's answer on stderr as it arrives (repeatable); nodes the graph marks "
        "`stream: true` are printed with --stream or any --stream-node.",
    ),
]
NoCacheOption = Annotated[
    bool, typer.Option("--no-cache", help="Call the model even when an identical request was answered before.")
]


def run_command(
    graph: Annotated[str, typer.Argument(help="A graph file, or the id/slug of a stored graph.")],
    version: Annotated[
        int | None,
        typer.Option("--version", help="A stored version to run (default: the promoted version, else the latest)."),
    ] = None,
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
    queue: QueueOption = None,
    stream: StreamOption = False,
    stream_nodes: StreamNodeOption = [],  # noqa: B006
) -> None:
    """Run a graph: store it (a new version only if it changed), start a run, execute it (here,
    or on workers with --queue or a broker in the workers table of plait.toml)."""
    from plait.cli.drive import execute, provider_from_options, session_for
    from plait.engine.run_input import StartError
    from plait.runs.start import start_run

    run_input = parse_inputs(inputs, input_file)
    if dry_run:
        from plait.cli.dry_run import dry_run_command

        dry_run_command(graph, run_input, provider_from_options(llm, config), db, json_output, upstream, config,
                        version=version)  # fmt: skip
        return
    if upstream is not None:
        fail("--upstream only applies with --dry-run")
    from plait.engine.outcome import EngineError

    with store_for(db) as store:
        provider, selection = _chosen(llm, config)
        workers = queued_settings(queue, db=db, llm=llm, config=config)
        how = Driving(llm, config, json_output, quiet, cache=not no_cache, stream=stream or tuple(stream_nodes))
        session = session_for(store, provider, how)  # checks the graph, then executes the run: one engine
        chosen = None
        if workers is not None:
            from plait.cli.queued import streamed_id

            chosen = streamed_id(store, workers, how)
        try:
            run_id = start_run(store, graph, run_input, llm=selection, check=session.check_executable,
                               announce="start" if workers is not None else None, run_id=chosen,
                               version=version)  # fmt: skip
        except StartError as exc:
            refuse(exc)
        except EngineError as exc:  # refused before the run exists: nothing is left behind
            fail(str(exc))
        if workers is not None:
            from plait.cli.queued import follow

            follow(store, workers, run_id, how)
        execute(session, run_id, how)


@drives_a_run
def resume_command(
    run_id: Annotated[str, typer.Argument(help="The run to continue (its id, or a unique prefix of it).")],
    db: DbOption = None,
    *,
    how: Driving,
) -> None:
    """Continue a run after a crash, a kill or a pause: completed nodes are never executed again.
    It executes on the run's own model unless --llm or --config names another (recorded on the run).
    A node whose process went down while executing it is executed again, however often that happened."""
    from plait.cli.drive import execute, run_provider, session_for

    with store_for(db) as store:
        run_id = resolve_run(store, run_id)
        provider = run_provider(store, run_id, how.llm, how.config, by="resume")
        execute(session_for(store, provider, how, retry_lost=True), run_id, how)


def queued_settings(queue: str | None, **given: str | None) -> Any:
    """The workers' settings when runs go to workers (--queue, or a [workers] broker), else None."""
    from plait.config import ConfigError, load_config
    from plait.worker.app import queued

    try:
        return queued(load_config(given.get("config")).workers, queue, **given)
    except (ConfigError, ValueError) as exc:
        fail(str(exc))


def _chosen(spec: str | None, config: str | None) -> tuple[Any, Any]:
    """The provider for a new run, and the model selection to store with it."""
    from plait.llm.select import LlmConfigError
    from plait.runs.model_choice import chosen

    try:
        return chosen(spec, config)
    except LlmConfigError as exc:
        fail(str(exc))
