"""Where a batch's finished records go: marked in the store, then written to their files, many
records at a time and off the path of the runs.

Records finish in bursts (64 model calls in flight answer within milliseconds of each other).
A transaction per record's mark would cost a batch about as much as its runs' own writes, and
a record waiting for its mark would hold its place among the `concurrency` runs meanwhile. So
a finished record is handed over here and its place goes to the next record at once; every
`FLUSH_S` (or sooner, once `FLUSH_MOST` are waiting) the waiting records are marked in one
transaction, and only then are their lines appended. A batch killed between the two writes the
lines when it is resumed (from the marks), never twice; one killed before the marks executes
nothing again (the records' runs are found finished) and writes them then.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import IO, Any

from plait.store.batches import COMPLETED, BatchRepository, RecordMark

FLUSH_S = 0.05
"""How long a finished record waits at most before it is marked and written."""
FLUSH_MOST = 512
"""Records marked in one transaction at most; more waiting are flushed without waiting."""


class ResultFile:
    """A JSONL file the batch appends to, one line per record; a line cut off by a kill is
    dropped when the batch is resumed."""

    def __init__(self, path: Path, *, resume: bool):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists():
            _drop_partial_line(path)
        self._handle: IO[str] = path.open("a" if resume else "w", encoding="utf-8")

    def indices(self, last: int) -> IndexSet:
        """The records already in the file, up to index `last` (a line naming a later one, from
        some other file, cannot make the set grow past what the batch has)."""
        found = IndexSet()
        with self.path.open("r", encoding="utf-8") as handle:
            for line in handle:
                try:
                    index = int(json.loads(line)["index"])
                except (ValueError, KeyError, TypeError):
                    continue
                if 0 <= index <= last:
                    found.add(index)
        return found

    def write(self, entry: dict[str, Any]) -> None:
        self._handle.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def flush(self) -> None:
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def _drop_partial_line(path: Path, chunk: int = 1 << 16) -> None:
    """Cut a last line the killed process left half-written, reading only the file's end."""
    with path.open("rb+") as handle:
        end = handle.seek(0, 2)
        position = end
        while position > 0:
            start = max(0, position - chunk)
            handle.seek(start)
            found = handle.read(position - start).rfind(b"\n")
            if found != -1:
                cut = start + found + 1
                break
            position = start
        else:
            cut = 0
        if cut != end:
            handle.truncate(cut)


class IndexSet:
    """Record indices as one bit each: a resumed batch of millions of records holds kilobytes,
    not a set of millions of ints."""

    def __init__(self) -> None:
        self._bits = bytearray()

    def add(self, index: int) -> None:
        if index < 0:
            raise ValueError(f"a record index is never negative, not {index}")
        byte = index >> 3
        if byte >= len(self._bits):
            self._bits.extend(bytes(byte + 1 - len(self._bits) + len(self._bits) // 2))
        self._bits[byte] |= 1 << (index & 7)

    def __contains__(self, index: object) -> bool:
        if not isinstance(index, int) or index < 0 or index >> 3 >= len(self._bits):
            return False
        return bool(self._bits[index >> 3] & (1 << (index & 7)))


class FinishedRecords:
    """Finished records on their way to the store and the files. Use it from one event loop;
    `drain()` at the end (or `flush()` when the batch is interrupted) before closing the files."""

    def __init__(self, batches: BatchRepository, batch_id: str, output: ResultFile, failures: ResultFile) -> None:
        self._batches, self._batch_id = batches, batch_id
        self._output, self._failures = output, failures
        self._waiting: list[tuple[RecordMark, dict[str, Any]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._error: Exception | None = None

    def add(self, mark: RecordMark, entry: dict[str, Any]) -> None:
        """Hand a finished record over: its mark, and the line its file gets once it is marked.
        Raises what an earlier flush raised (the store failed: the batch must stop)."""
        if self._error is not None:
            raise self._error
        self._waiting.append((mark, entry))
        if len(self._waiting) >= FLUSH_MOST:
            self.flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_S, self._flush_now)

    def drain(self) -> None:
        """Mark and write every record handed over; raises what a flush raised."""
        self.flush()
        if self._error is not None:
            raise self._error

    def flush(self) -> None:
        """Mark and write the waiting records now (also when the batch is interrupted)."""
        if self._timer is not None:
            self._timer.cancel()
        self._flush_now()

    def _flush_now(self) -> None:
        self._timer = None
        waiting, self._waiting = self._waiting, []
        if not waiting or self._error is not None:
            return
        try:
            self._batches.mark(self._batch_id, [mark for mark, _ in waiting])
        except Exception as exc:  # the store failed: these records stay unmarked and unwritten
            self._error = exc
            return
        for mark, entry in waiting:
            (self._output if mark.status == COMPLETED else self._failures).write(entry)
        self._output.flush()
        self._failures.flush()
