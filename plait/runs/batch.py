"""A batch: one run of a graph per record of a JSONL file, at most `concurrency` at once, each
result written as it finishes, resumable.

Memory stays flat whatever the file's size: the input is read line by line as places free up,
finished records are not kept (their state is in the store), and a resumed batch walks the
store's finished indices beside the file, both in line order. What a record is: its 0-based line
in the file (blank lines are not records), so a result names the line it came from.

- A result goes to the output file as `{"index", "run_id", "output"}` when its run completes; a
  record that cannot run (a malformed line, an input the graph refuses) or whose run fails goes
  to the failed file with its `reason`, and the batch goes on.
- With workers (`queued`), each record's run is announced to them in the transaction that
  creates it and awaited through the store: the same bounds, files and resume.
- `--resume` continues the newest batch of the same input and output files: finished records
  are skipped, a record whose run was interrupted continues that run (its completed nodes are
  not executed again: a record's run id is derived from the batch and the line, so it is found
  again), and a completed record whose line did not reach the output file (the batch was killed
  in between) is written then. Each finished record is in its file once.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from plait.engine.outcome import RunOutcome
from plait.engine.run_input import StartError, check_input
from plait.engine.runner import Engine
from plait.errors import PlaitError, Refusal
from plait.model.enums import RunStatus
from plait.runs.elsewhere import RunWaiter
from plait.runs.start import resolve_graph
from plait.store import Store, StoredGraph
from plait.store.batches import COMPLETED, FAILED, INTERRUPTED, RUNNING, BatchRecord


class BatchError(PlaitError):
    """The batch cannot start as asked (its files, or nothing to resume)."""


@dataclass
class BatchProgress:
    """How far the batch is: records finished now (`done`, `failed`), and before this process
    (`resumed`) of `total`."""

    total: int
    done: int = 0
    failed: int = 0
    resumed: int = 0
    started_at: float = field(default_factory=time.monotonic)

    @property
    def finished(self) -> int:
        return self.done + self.failed + self.resumed


@dataclass(frozen=True, slots=True)
class BatchFiles:
    input: Path
    output: Path
    failed: Path

    @classmethod
    def of(cls, input_path: Path, output: Path, failed: Path | None = None) -> BatchFiles:
        output = output.resolve()
        failed = (failed or output.with_name(output.stem + ".failed.jsonl")).resolve()
        return cls(input_path.resolve(), output, failed)


def count_records(path: Path) -> int:
    """The records of a JSONL file (its non-blank lines), counted without holding the file."""
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


def records(path: Path, finished: Iterator[int]) -> Iterator[tuple[int, str]]:
    """(index, line) of each record not in `finished` (ascending indices), read as needed."""
    skip = next(finished, None)
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for index, line in enumerate(handle):
            while skip is not None and skip < index:
                skip = next(finished, None)
            if skip == index or not line.strip():
                continue
            yield index, line


class ResultFile:
    """A JSONL file the batch appends to, one line per record; a line cut off by a kill is
    dropped when the batch is resumed."""

    def __init__(self, path: Path, *, resume: bool):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists():
            _drop_partial_line(path)
        self._handle: IO[str] = path.open("a" if resume else "w", encoding="utf-8")

    def indices(self) -> set[int]:
        """The records already in the file."""
        found: set[int] = set()
        with self.path.open("r", encoding="utf-8") as handle:
            for line in handle:
                try:
                    found.add(int(json.loads(line)["index"]))
                except (ValueError, KeyError, TypeError):
                    continue
        return found

    def write(self, entry: dict[str, Any]) -> None:
        self._handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def _drop_partial_line(path: Path) -> None:
    with path.open("rb+") as handle:
        data = handle.read()
        if data and not data.endswith(b"\n"):
            handle.truncate(data.rfind(b"\n") + 1)


class Batch:
    """One batch being executed by this process, or by workers (`queued`: each record's run is
    announced to them in the transaction that creates it, and awaited through the store)."""

    def __init__(self, store: Store, engine: Engine, record: BatchRecord, stored: StoredGraph, files: BatchFiles,
                 *, resume: bool, llm: dict[str, Any] | None = None,
                 queued: Callable[[], None] | None = None):  # fmt: skip
        """`queued`: send the outbox (called after each run is created); None: runs execute here."""
        self.store, self.engine, self.record, self.stored, self.files = store, engine, record, stored, files
        self.llm = llm
        self.queued = queued
        self._waiter = RunWaiter(store) if queued is not None else None
        self.output = ResultFile(files.output, resume=resume)
        self.failures = ResultFile(files.failed, resume=resume)
        self.resume = resume

    async def run(
        self, concurrency: int, progress: BatchProgress, on_progress: Callable[[BatchProgress], None]
    ) -> None:
        """Every record not finished yet, `concurrency` at a time; the batch's status at the end."""
        queue: asyncio.Queue[tuple[int, str] | None] = asyncio.Queue(maxsize=concurrency)

        async def work() -> None:
            while (item := await queue.get()) is not None:
                ok = await self._one(*item)
                progress.done += ok
                progress.failed += not ok
                on_progress(progress)

        workers = [asyncio.create_task(work()) for _ in range(concurrency)]
        try:
            for item in records(self.files.input, self.store.batches.finished(self.record.id)):
                await queue.put(item)
            for _ in workers:
                await queue.put(None)
            await asyncio.gather(*workers)
        except BaseException:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            self.store.batches.set_status(self.record.id, INTERRUPTED)
            raise
        finally:
            self.output.close()
            self.failures.close()
        self.store.batches.set_status(self.record.id, COMPLETED)

    def catch_up_output(self) -> int:
        """Write the completed records whose line did not reach the output file (a kill between
        the two); how many were written."""
        written = self.output.indices()
        missing = 0
        for index, run_id in self.store.batches.completed_runs(self.record.id):
            if index not in written:
                self.output.write({"index": index, "run_id": run_id, "output": self.store.runs.get(run_id).output})
                missing += 1
        return missing

    async def _one(self, index: int, line: str) -> bool:
        """Run one record; True when it completed."""
        batches = self.store.batches
        run_id = record_run_id(self.record.id, index)
        if not (self.resume and await asyncio.to_thread(self.store.runs.exists, run_id)):
            try:
                run_input = self._input(line)
            except (ValueError, StartError) as exc:
                return self._failed(index, None, _reason(exc))
            self.store.runs.add(graph_id=self.stored.graph_id, graph_version=self.stored.version,
                                schema_version=self.stored.schema_version, input=run_input, llm=self.llm,
                                run_id=run_id, announce="batch" if self.queued else None)  # fmt: skip
        outcome = await self._execute(run_id)
        if outcome.status != RunStatus.COMPLETED:
            error = outcome.error or {}
            reason = f"the run ended {outcome.status.value}: {error.get('message') or error.get('kind') or ''}".strip()
            return self._failed(index, run_id, reason.rstrip(":"))
        self.output.write({"index": index, "run_id": run_id, "output": outcome.output})
        batches.mark(self.record.id, index, COMPLETED, run_id=run_id)
        return True

    async def _execute(self, run_id: str) -> RunOutcome:
        if self.queued is None or self._waiter is None:
            return await self.engine.run(run_id)
        await asyncio.to_thread(self.queued)
        return await self._waiter.wait(run_id)

    def _input(self, line: str) -> dict[str, Any]:
        value = json.loads(line)
        if not isinstance(value, dict):
            raise ValueError(f"a record must be a JSON object (the run input), not {type(value).__name__}")
        check_input(self.stored, value)
        return value

    def _failed(self, index: int, run_id: str | None, reason: str) -> bool:
        self.failures.write({"index": index, "line": index + 1, "run_id": run_id, "reason": reason})
        self.store.batches.mark(self.record.id, index, FAILED, run_id=run_id, reason=reason)
        return False


def record_run_id(batch_id: str, index: int) -> str:
    """The id of record `index`'s run, the same every time it is asked: a resumed batch finds the
    run an earlier process started (and continues it), or creates it under that id, never a
    second run for the record."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"plait-batch:{batch_id}:{index}"))


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at column {exc.colno}"
    if isinstance(exc, StartError):
        details = "; ".join(str(d) for d in exc.details)
        return f"{exc.message}: {details}" if details else exc.message
    return str(exc)


def open_batch(store: Store, engine: Engine, ref: str, files: BatchFiles, *, resume: bool,
               llm: dict[str, Any] | None = None,
               queued: Callable[[], None] | None = None) -> tuple[Batch, BatchProgress]:  # fmt: skip
    """The batch to execute: a new one of `ref`, or with `resume` the newest one of these files
    (on the graph version it started with)."""
    if not files.input.is_file():
        raise BatchError(f"no such input file: {files.input}", "give a JSONL file, one run input per line",
                         kind=Refusal.NOT_FOUND)  # fmt: skip
    if resume:
        record = store.batches.newest(str(files.input), str(files.output))
        if record is None:
            raise BatchError(f"no batch of {files.input} into {files.output} to resume",
                             "run it without --resume first", kind=Refusal.NOT_FOUND)  # fmt: skip
        stored = store.graphs.get(record.graph_id, record.graph_version)
    else:
        if files.output.exists() and files.output.stat().st_size:
            raise BatchError(f"{files.output} exists", "pass --resume to continue that batch, or choose another "
                             "--output", kind=Refusal.CONFLICT)  # fmt: skip
        stored = resolve_graph(store, ref)
        record = store.batches.create(graph_id=stored.graph_id, graph_version=stored.version,
                                      input_path=str(files.input), output_path=str(files.output),
                                      failed_path=str(files.failed))  # fmt: skip
    engine.check_executable(stored)
    total = count_records(files.input)
    store.batches.set_status(record.id, RUNNING, total=total)
    counts = store.batches.counts(record.id)
    progress = BatchProgress(total=total, resumed=counts.get(COMPLETED, 0) + counts.get(FAILED, 0))
    batch = Batch(store, engine, record, stored, files, resume=resume, llm=llm, queued=queued)
    return batch, progress
