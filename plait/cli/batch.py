"""`plait batch GRAPH --input-file records.jsonl --output results.jsonl`: one run per record,
a bounded number at once, with a progress bar; `--resume` continues after a stop or a kill."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from plait.cli.common import EXIT_FAILED, EXIT_OK, fail, print_json, refuse, store_for
from plait.cli.options import DbOption, Driving, QueueOption, drives_a_run

EXIT_INTERRUPTED = 130


@drives_a_run
def batch_command(
    graph: Annotated[str, typer.Argument(help="A graph file, or the id/slug of a stored graph.")],
    input_file: Annotated[Path, typer.Option("--input-file", help="JSONL: one run input (a JSON object) per line.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="JSONL of results: {index, run_id, output} per record.")
    ] = Path("results.jsonl"),
    failed: Annotated[
        Path | None,
        typer.Option("--failed", help="JSONL of failed records with their reason (default: OUTPUT.failed.jsonl)."),
    ] = None,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            "-c",
            min=1,
            max=1000,
            help="Records (runs) at once. Above the provider's max_concurrency keeps it busy: a record spends "
            "a little time outside its model call.",
        ),
    ] = 8,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the batch of these files: finished records are skipped.")
    ] = False,
    db: DbOption = None,
    queue: QueueOption = None,
    *,
    how: Driving,
) -> None:
    """Run GRAPH once per record of --input-file, --concurrency at a time (here, or on workers with
    --queue). Exit 0 when every record completed, 1 when some failed (they are in the failed
    file), 130 when stopped (continue with --resume)."""
    from plait.cli import interrupt
    from plait.cli.drive import provider_from_options, session_for
    from plait.cli.run import queued_settings
    from plait.engine.run_input import StartError
    from plait.runs.batch import BatchError, BatchFiles, open_batch
    from plait.runs.model_choice import describe

    files = BatchFiles.of(input_file, output, failed)
    workers = queued_settings(queue, db=db, llm=how.llm, config=how.config)
    with store_for(db) as store:
        queued = _relay(store, workers) if workers is not None else None
        provider, llm = provider_from_options(how.llm, how.config), describe(how.llm, how.config)
        session = session_for(store, provider, how, llm=llm)
        try:
            batch, progress = open_batch(store, session.engine, graph, files, resume=resume, llm=llm, queued=queued)
        except StartError as exc:
            refuse(exc)
        except BatchError as exc:
            fail(exc.message, exc.hint)
        if resume:
            batch.catch_up_output()
        bar = _Bar(progress.total, quiet=how.quiet or how.json_output)
        bar.update(progress)
        try:
            with bar:
                work = batch.run(concurrency, progress, bar.update)
                if workers is not None and not (how.quiet or how.json_output):
                    work = _telling_if_untaken(work, batch, store, workers)
                interrupt.run(work, cleanup=session.aclose)
        except interrupt.Interrupted:
            sys.stderr.write(f"stopped: continue with plait batch {graph} --input-file {input_file} "
                             f"--output {output} --resume\n")  # fmt: skip
            raise typer.Exit(EXIT_INTERRUPTED) from None
        summary = {"batch_id": batch.record.id, "total": progress.total, "completed": progress.done,
                   "failed": progress.failed, "resumed": progress.resumed, "output": str(files.output),
                   "failed_file": str(files.failed),
                   "seconds": round(time.monotonic() - progress.started_at, 3)}  # fmt: skip
        if how.json_output:
            print_json(summary)
        elif not how.quiet:
            _report(summary)
    raise typer.Exit(EXIT_OK if progress.failed == 0 else EXIT_FAILED)


async def _telling_if_untaken(work: Any, batch: Any, store: Any, settings: Any) -> None:
    """`work`, saying once when the batch's first run is still waiting for a worker after a while."""
    import asyncio

    from plait.cli.queued import UNTAKEN_S, untaken
    from plait.model.enums import RunStatus

    async def watch() -> None:
        await asyncio.sleep(UNTAKEN_S)
        first = batch.first_queued
        try:
            waiting = first is not None and (await asyncio.to_thread(store.runs.get, first)).status == RunStatus.PENDING
        except Exception:  # a hint only: the batch itself reports what is wrong with the store
            return
        if waiting:
            sys.stderr.write(
                untaken(settings, str(first), UNTAKEN_S, "Ctrl-C stops the batch (continue it with --resume)")
            )

    watcher = asyncio.ensure_future(watch())
    try:
        await work
    finally:
        watcher.cancel()


def _relay(store: Any, settings: Any) -> Any:
    """What sends each record's message to the workers right after its run is created."""
    from plait.worker.app import make_app
    from plait.worker.relay import Relay

    return Relay(store, make_app(settings), settings).flush


def _report(summary: dict[str, Any]) -> None:
    line = f"{summary['completed']} completed, {summary['failed']} failed"
    if summary["resumed"]:
        line += f", {summary['resumed']} finished before (resumed)"
    sys.stderr.write(f"{line}; results in {summary['output']}\n")
    if summary["failed"]:
        sys.stderr.write(f"failed records and their reasons: {summary['failed_file']}\n")


class _Bar:
    """The Rich progress bar on stderr: done/total, rate, ETA, failures."""

    def __init__(self, total: int, *, quiet: bool):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._progress: Any = None
        if quiet:
            return
        self._progress = Progress(
            TextColumn("batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]:.1f}/s"),
            TimeRemainingColumn(),
            TextColumn("[red]{task.fields[failed]} failed"),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._progress.add_task("batch", total=total, rate=0.0, failed=0)

    def __enter__(self) -> _Bar:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def update(self, progress: Any) -> None:
        if self._progress is None:
            return
        elapsed = max(1e-6, time.monotonic() - progress.started_at)
        rate = (progress.done + progress.failed) / elapsed
        self._progress.update(self._task, completed=progress.finished, rate=rate, failed=progress.failed)
