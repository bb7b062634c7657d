"""`plait runs watch`: attach to a run another process executes and follow it until it stops."""

from __future__ import annotations

from typing import Annotated

import typer

from plait.cli.common import resolve_run, store_for
from plait.cli.options import ConfigOption, DbOption, Driving, JsonOption, QuietOption


def watch_command(
    run_id: Annotated[str, typer.Argument(help="The run to follow (its id, or a unique prefix of it).")],
    db: DbOption = None,
    config: ConfigOption = None,
    queue: Annotated[
        str | None,
        typer.Option(
            "--queue",
            help="The workers' broker to follow their events through (redis://HOST:6379/0); default: the broker "
            "of plait.toml's workers table; `none`: read the store.",
        ),
    ] = None,
    stream: Annotated[
        bool, typer.Option("--stream", help="Print the model answers on stderr as they arrive (runs on workers).")
    ] = False,
    stream_nodes: Annotated[
        list[str], typer.Option("--stream-node", help="Print this node's answer as it arrives (repeatable).")
    ] = [],  # noqa: B006
    json_output: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Follow a run executed elsewhere (on workers, by a server, by another `plait run`) until it
    ends or waits for a person, then print its result as `plait run` does. With workers (--queue,
    or the broker of plait.toml's workers table) their events are followed, and --stream asks them
    to stream the answers of the nodes that start from now on; otherwise the store is read every
    half second, and answers cannot be streamed (the process executing the run shares none).
    Ctrl-C stops following; the run goes on."""
    from plait.cli.queued import watch
    from plait.cli.run import queued_settings

    how = Driving(None, config, json_output, quiet, stream=stream or tuple(stream_nodes))
    with store_for(db) as store:
        run_id = resolve_run(store, run_id)
        workers = queued_settings(queue, db=db, config=config)
        if how.stream and workers is None and not quiet:
            typer.echo(
                "no workers' broker: answers stream only from workers (--queue redis://HOST:6379/0); "
                "following the nodes' progress from the store",
                err=True,
            )
        watch(store, workers, run_id, how)
