"""A batch: one run of a graph per record of a JSONL file, at most `concurrency` at once, each
result written as it finishes, resumable.

Memory stays flat whatever the file's size: the input is read line by line as places free up,
finished records are not kept (their state is in the store), and a resumed batch walks the
store's finished indices beside the file, both in line order. What a record is: its 0-based line
in the file (blank lines are not records; only `\n` ends a line), so a result names the line it
came from. A record is refused as `plait run` refuses an input file: over 10 MiB (read past,
never held), not UTF-8 text, not strict JSON.

- A result goes to the output file as `{"index", "run_id", "output"}` when its run completes; a
  record that cannot run (a malformed line, an input the graph refuses) or whose run fails goes
  to the failed file with its `reason`, and the batch goes on.
- With workers (`queued`), each record's run is announced to them in the transaction that
  creates it and awaited through the store: the same bounds, files and resume.
- `--resume` continues the newest batch of the same input and output files: finished records
  are skipped, a record whose run was interrupted continues that run (its completed nodes are
  not executed again: a record's run id is derived from the batch and the line, so it is found
  again), and a finished record whose line did not reach its file (the batch was killed between
  marking the record in the store and writing the line) is written then. Each finished record
  is in its file once.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from plait.engine.outcome import RunOutcome
from plait.engine.run_input import StartError, check_input
from plait.engine.runner import Engine
from plait.errors import PlaitError, Refusal
from plait.model.documents import MAX_FILE_BYTES
from plait.model.enums import RunStatus
from plait.runs.batch_results import FinishedRecords, ResultFile
from plait.runs.elsewhere import RunWaiter
from plait.runs.start import resolve_graph
from plait.store import Store, StoredGraph
from plait.store.batches import COMPLETED, FAILED, INTERRUPTED, RUNNING, BatchRecord, RecordMark


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


MAX_RECORD_BYTES = MAX_FILE_BYTES
"""The largest record (one line): what `plait run --input-file` and the HTTP API take as one input."""


@dataclass(frozen=True, slots=True)
class Oversized:
    """A record over `MAX_RECORD_BYTES`, read past without being kept: how many bytes it had."""

    size: int


Line = bytes | Oversized


class RecordError(ValueError):
    """A line that cannot be a run input: too large, not UTF-8 text, not a JSON object."""


def count_records(path: Path) -> int:
    """The records of a JSONL file (its non-blank lines), counted without holding the file."""
    with path.open("rb") as handle:
        return sum(1 for line in _lines(handle) if isinstance(line, Oversized) or line.strip())


def records(path: Path, finished: Iterator[int]) -> Iterator[tuple[int, Line]]:
    """(index, line) of each record not in `finished` (ascending indices), read as needed. Only
    `\n` ends a line (a `\r` before it is dropped); a line over `MAX_RECORD_BYTES` is read past,
    never held, and given as `Oversized`."""
    skip = next(finished, None)
    with path.open("rb") as handle:
        for index, line in enumerate(_lines(handle)):
            while skip is not None and skip < index:
                skip = next(finished, None)
            if skip == index or not (isinstance(line, Oversized) or line.strip()):
                continue
            yield index, line


def _lines(handle: BinaryIO, limit: int = MAX_RECORD_BYTES) -> Iterator[Line]:
    """The lines of `handle` without their `\n` or `\r\n`, each read with at most `limit` + 2
    bytes held."""
    while line := handle.readline(limit + 2):  # the line, its "\r\n", and one byte to see it is too long
        if line.endswith(b"\n") or len(line) <= limit:  # the whole line
            content = line.removesuffix(b"\n").removesuffix(b"\r")
            yield content if len(content) <= limit else Oversized(len(content))
            continue
        size = len(line)
        while not line.endswith(b"\n") and (line := handle.readline(1 << 20)):
            size += len(line)
        yield Oversized(size - (1 if line.endswith(b"\n") else 0))


class Batch:
    """One batch being executed by this process, or by workers (`queued`: each record's run is
    announced to them in the transaction that creates it, and awaited through the store)."""

    def __init__(self, store: Store, engine: Engine, record: BatchRecord, stored: StoredGraph, files: BatchFiles,
                 *, resume: bool, llm: dict[str, Any] | None = None,
                 queued: Callable[[], None] | None = None):  # fmt: skip
        """`queued`: send the outbox (called after each run is created); None: runs execute here,
        on `engine`, stored with the engine's model selection. `llm`: the model selection of
        the runs created for workers."""
        self.store, self.engine, self.record, self.stored, self.files = store, engine, record, stored, files
        self.llm = llm
        self.queued = queued
        self._waiter = RunWaiter(store) if queued is not None else None
        self.first_queued: str | None = None
        """The first run this process handed to the workers, new or resumed (whether any worker
        takes them)."""
        self.output = ResultFile(files.output, resume=resume)
        self.failures = ResultFile(files.failed, resume=resume)
        self.resume = resume
        self._finished = FinishedRecords(store.batches, record.id, self.output, self.failures)

    async def run(
        self, concurrency: int, progress: BatchProgress, on_progress: Callable[[BatchProgress], None]
    ) -> None:
        """Every record not finished yet, `concurrency` at a time; the batch's status at the end."""
        queue: asyncio.Queue[tuple[int, Line] | None] = asyncio.Queue(maxsize=concurrency)

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
            self._finished.drain()
        except BaseException:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            self._finished.flush()
            self.store.batches.set_status(self.record.id, INTERRUPTED)
            raise
        finally:
            self.output.close()
            self.failures.close()
        self.store.batches.set_status(self.record.id, COMPLETED)

    def catch_up_output(self) -> int:
        """Write the finished records whose line did not reach its file (the batch was killed
        between marking a record and writing its line); how many were written."""
        last = self.store.batches.last_index(self.record.id)
        if last is None:
            return 0
        written, failed = self.output.indices(last), self.failures.indices(last)
        missing = 0
        for mark in self.store.batches.finished_records(self.record.id):
            if mark.status == COMPLETED and mark.index not in written and mark.run_id is not None:
                self.output.write(self._result(mark.index, mark.run_id, self.store.runs.get(mark.run_id).output))
            elif mark.status == FAILED and mark.index not in failed:
                self.failures.write(self._failure(mark.index, mark.run_id, mark.reason or ""))
            else:
                continue
            missing += 1
        self.output.flush()
        self.failures.flush()
        return missing

    async def _one(self, index: int, line: Line) -> bool:
        """Run one record; True when it completed."""
        run_id = record_run_id(self.record.id, index)
        if self.resume and await asyncio.to_thread(self.store.runs.exists, run_id):
            outcome = await self._continue(run_id)
        else:
            try:
                run_input = self._input(line)
            except (ValueError, StartError) as exc:
                return self._failed(index, None, _reason(exc))
            outcome = await self._start(run_id, run_input)
        if outcome.status != RunStatus.COMPLETED:
            error = outcome.error or {}
            reason = f"the run ended {outcome.status.value}: {error.get('message') or error.get('kind') or ''}".strip()
            return self._failed(index, run_id, reason.rstrip(":"))
        self._finished.add(RecordMark(index, COMPLETED, run_id), self._result(index, run_id, outcome.output))
        return True

    async def _start(self, run_id: str, run_input: dict[str, Any]) -> RunOutcome:
        """A new record's run: created already begun here (one transaction), or announced to
        the workers in the transaction that creates it."""
        if self.queued is None or self._waiter is None:
            # the batch bounds its runs in flight: a record finding the providers busy waits for
            # its slot in the pool's queue, not at the resource gate (see plait/engine/resources.py)
            return await self.engine.start(self.stored, run_input, run_id=run_id, gated=True, bounded=True)
        self.store.runs.add(graph_id=self.stored.graph_id, graph_version=self.stored.version,
                            schema_version=self.stored.schema_version, input=run_input, llm=self.llm,
                            run_id=run_id, announce="batch")  # fmt: skip
        return await self._on_workers(run_id)

    async def _continue(self, run_id: str) -> RunOutcome:
        """A resumed record's run, which an earlier process created: continued where it stopped."""
        if self.queued is None or self._waiter is None:
            return await self.engine.run(run_id, bounded=True)
        return await self._on_workers(run_id)

    async def _on_workers(self, run_id: str) -> RunOutcome:
        """Send the outbox (the run's message is in it) and wait for the workers to end the run."""
        assert self.queued is not None
        assert self._waiter is not None
        self.first_queued = self.first_queued or run_id
        await asyncio.to_thread(self.queued)
        return await self._waiter.wait(run_id)

    def _input(self, line: Line) -> dict[str, Any]:
        """The run input a line holds, refused as `plait run` refuses an input file: over the size
        limit, not UTF-8 text, not strict JSON (NaN is not JSON), not an object the graph takes."""
        if isinstance(line, Oversized):
            raise RecordError(f"the record is {line.size / 1048576:.1f} MiB; the limit is "
                              f"{MAX_RECORD_BYTES / 1048576:.1f} MiB per record")  # fmt: skip
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(f"not UTF-8 text (byte 0x{line[exc.start]:02x} at offset {exc.start})") from None
        value = json.loads(text, parse_constant=_not_json)
        if not isinstance(value, dict):
            raise RecordError(f"a record must be a JSON object (the run input), not {type(value).__name__}")
        check_input(self.stored, value)
        return value

    def _failed(self, index: int, run_id: str | None, reason: str) -> bool:
        self._finished.add(RecordMark(index, FAILED, run_id, reason), self._failure(index, run_id, reason))
        return False

    @staticmethod
    def _result(index: int, run_id: str, output: Any) -> dict[str, Any]:
        return {"index": index, "run_id": run_id, "output": output}

    @staticmethod
    def _failure(index: int, run_id: str | None, reason: str) -> dict[str, Any]:
        return {"index": index, "line": index + 1, "run_id": run_id, "reason": reason}


def record_run_id(batch_id: str, index: int) -> str:
    """The id of record `index`'s run, the same every time it is asked: a resumed batch finds the
    run an earlier process started (and continues it), or creates it under that id, never a
    second run for the record."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"plait-batch:{batch_id}:{index}"))


def _not_json(constant: str) -> Any:
    raise RecordError(f"not JSON: {constant} is not a JSON number")


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
