"""`plait worker`: execute the runs that `plait run --queue`, `plait batch --queue` and `plait
serve` (with a broker) enqueue, against the shared database (docs/deploy.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from plait.worker.app import WorkerSettings

from plait.cli.common import fail
from plait.cli.options import ConfigOption, DbOption, LlmOption

BrokerOption = Annotated[
    str | None,
    typer.Option(
        "--queue",
        help="The broker to take runs from (redis://HOST:6379/0); default: the broker of plait.toml's workers table.",
    ),
]


def worker_command(
    queue: BrokerOption = None,
    db: DbOption = None,
    llm: LlmOption = None,
    config: ConfigOption = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, max=512, help="Runs at once.")] = 8,
    beat: Annotated[bool, typer.Option("--beat", help="Also fire the cron schedules (each firing once).")] = False,
    name: Annotated[str | None, typer.Option("--name", help="This worker's name (default: celery@HOST).")] = None,
) -> None:
    """Execute queued runs until stopped; SIGTERM gives the runs in flight back to the others."""
    from plait.worker.main import serve

    settings = worker_settings(queue, db=db, llm=llm, config=config)
    _log_to_stderr()
    code = serve(settings, concurrency=concurrency, beat=beat, name=name)
    if code:
        raise typer.Exit(code)


def _log_to_stderr() -> None:
    """The worker's own lines (ready, each run's ending, stopping) on stderr with their time;
    Celery's own logging stays at warnings."""
    import logging

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s plait worker: %(message)s", "%Y-%m-%d %H:%M:%S"))
    logger = logging.getLogger("plait.worker")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def worker_settings(queue: str | None, **given: str | None) -> WorkerSettings:
    """The workers' settings of `[workers]` in plait.toml, `--queue` first; exit 2 without a broker."""
    from plait.config import ConfigError, load_config
    from plait.worker.app import WorkerSettings

    try:
        workers = load_config(given.get("config")).workers
        return WorkerSettings.of(workers, broker=queue, **given)
    except (ConfigError, ValueError) as exc:
        fail(str(exc))
