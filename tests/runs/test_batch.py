"""Batches as a use case, on both stores: one run per record, bounded at once; a malformed line
or a refused input is reported with its line and the batch goes on; a stopped batch resumed
skips what finished, continues the runs it had started (never a second run for a record), and
writes a completed record whose line was lost; every record ends in exactly one file, once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from plait.engine.resources import ResourceGate
from plait.engine.runner import Engine
from plait.runs.batch import MAX_RECORD_BYTES, BatchError, BatchFiles, BatchProgress, open_batch, record_run_id
from plait.store import Store
from tests.engine.test_engine import graph_file, script
from tests.engine.test_resources import gate_of, seen

TEXT_INPUT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def graph(tmp_path: Path) -> str:
    return graph_file(
        tmp_path,
        [{"id": "clean", "type": "LLM_CALL", "user_prompt_tpl": "Clean: {{ input.text }}"}],
        [{"source": "clean", "target": "END", "schema_id": "text"}],
        input_schema=TEXT_INPUT,
    )


def write_records(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def execute(store: Store, provider: Any, ref: str, files: BatchFiles, *, resume: bool = False,
            concurrency: int = 4, stop_after: int | None = None,
            gate: ResourceGate | None = None) -> BatchProgress:  # fmt: skip
    """Run the batch; with `stop_after`, cancel it once that many records finished (as Ctrl-C);
    `gate`: the engine's resource decisions (default: none)."""
    engine = Engine(store, provider, cache=False)
    engine.gate = gate
    batch, progress = open_batch(store, engine, ref, files, resume=resume)
    if resume:
        batch.catch_up_output()

    async def go() -> None:
        task = asyncio.ensure_future(batch.run(concurrency, progress, lambda p: None))
        try:
            if stop_after is None:
                await task
                return
            while progress.done + progress.failed < stop_after:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await engine.aclose()

    asyncio.run(go())
    return progress


def test_every_record_runs_once_and_bad_lines_are_reported_with_their_line(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"output": {"text": "clean"}}])
    records = [json.dumps({"text": f"r{i}"}) for i in range(10)]
    records[3] = "{not json"
    records[6] = json.dumps({"wrong": 1})
    records.insert(8, "")  # a blank line is not a record
    files = BatchFiles.of(write_records(tmp_path / "in.jsonl", records), tmp_path / "out.jsonl")
    progress = execute(store, provider, graph(tmp_path), files)
    assert (progress.total, progress.done, progress.failed) == (10, 8, 2)
    done = lines_of(files.output)
    assert sorted(d["index"] for d in done) == [0, 1, 2, 4, 5, 7, 9, 10]
    assert all(d["output"]["text"] == "clean" for d in done)
    failed = {f["line"]: f["reason"] for f in lines_of(files.failed)}
    assert set(failed) == {4, 7}
    assert failed[4].startswith("not JSON")
    assert "input_schema" in failed[7]
    assert len(store.runs.list(limit=100)) == 8  # no run for a record that could not start


def test_a_stopped_batch_resumed_finishes_every_record_exactly_once(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"output": {"text": "clean"}, "delay_ms": 30}])
    records = [json.dumps({"text": f"r{i}"}) for i in range(40)]
    files = BatchFiles.of(write_records(tmp_path / "in.jsonl", records), tmp_path / "out.jsonl")
    ref = graph(tmp_path)
    first = execute(store, provider, ref, files, concurrency=6, stop_after=10)
    assert 10 <= first.done < 40
    batch = store.batches.newest(str(files.input), str(files.output))
    assert batch is not None
    assert batch.status == "interrupted"
    interrupted = {i: record_run_id(batch.id, i) for i in range(40)}
    interrupted = {
        i: r for i, r in interrupted.items() if store.runs.exists(r) and store.runs.get(r).status != "completed"
    }
    assert interrupted  # runs were in flight when it stopped
    second = execute(store, provider, ref, files, resume=True, concurrency=6)
    assert second.resumed == first.done
    assert first.done + second.done == 40
    indices = [d["index"] for d in lines_of(files.output)]
    assert sorted(indices) == list(range(40))  # each once
    runs = store.runs.list(limit=1000)
    assert len(runs) == 40  # the interrupted records' runs were continued, not started again
    by_index = {d["index"]: d["run_id"] for d in lines_of(files.output)}
    assert all(by_index[i] == run_id for i, run_id in interrupted.items())


def test_a_completed_record_whose_line_was_lost_is_written_on_resume(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"output": {"text": "clean"}}])
    files = BatchFiles.of(write_records(tmp_path / "in.jsonl", [json.dumps({"text": "a"})] * 3), tmp_path / "o.jsonl")
    ref = graph(tmp_path)
    execute(store, provider, ref, files)
    kept = files.output.read_text().splitlines()
    files.output.write_text("\n".join(kept[:2]) + "\n" + kept[2][:10])  # killed while writing the third
    execute(store, provider, ref, files, resume=True)
    assert sorted(d["index"] for d in lines_of(files.output)) == [0, 1, 2]


def test_a_failed_record_whose_line_was_lost_is_written_on_resume_once(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"output": {"text": "clean"}}])
    records = [json.dumps({"text": "a"}), "{not json", json.dumps({"text": "b"})]
    files = BatchFiles.of(write_records(tmp_path / "in.jsonl", records), tmp_path / "o.jsonl")
    ref = graph(tmp_path)
    execute(store, provider, ref, files)
    assert [f["line"] for f in lines_of(files.failed)] == [2]
    files.failed.write_text("")  # killed after the record was marked, before its line was written
    execute(store, provider, ref, files, resume=True)
    assert [(f["index"], f["line"]) for f in lines_of(files.failed)] == [(1, 2)]
    assert "not JSON" in lines_of(files.failed)[0]["reason"]
    assert sorted(d["index"] for d in lines_of(files.output)) == [0, 2]


def test_files_that_cannot_start_a_batch_are_refused(store: Store, tmp_path: Path) -> None:
    provider = script(tmp_path, [{"output": {"text": "clean"}}])
    engine = Engine(store, provider)
    ref = graph(tmp_path)
    missing = BatchFiles.of(tmp_path / "none.jsonl", tmp_path / "o.jsonl")
    with pytest.raises(BatchError, match="no such input file"):
        open_batch(store, engine, ref, missing, resume=False)
    files = BatchFiles.of(write_records(tmp_path / "in.jsonl", ["{}"]), tmp_path / "o.jsonl")
    with pytest.raises(BatchError, match="to resume"):
        open_batch(store, engine, ref, files, resume=True)
    files.output.write_text('{"index": 0}\n')
    with pytest.raises(BatchError, match="exists") as refused:
        open_batch(store, engine, ref, files, resume=False)
    assert "--resume" in (refused.value.hint or "")


def test_busy_providers_do_not_queue_a_batchs_records_but_low_disk_still_rejects_them(
    store: Store, tmp_path: Path
) -> None:
    """The batch bounds its runs in flight itself: a record finding the providers' capacity used
    up waits for its slot in the pool's queue, not at the resource gate (which would record a
    decision on every record of a batch that keeps its provider at the limit); the machine's
    own limits still apply to it."""
    provider = script(tmp_path, [{"output": {"text": "clean"}}])
    ref = graph(tmp_path)
    inputs = write_records(tmp_path / "in.jsonl", [json.dumps({"text": f"r{i}"}) for i in range(3)])
    busy = BatchFiles.of(inputs, tmp_path / "busy.jsonl")
    gate = gate_of(store, [seen(capacity_percent=0)], queue_max_s=1)
    progress = execute(store, provider, ref, busy, gate=gate)
    assert (progress.done, progress.failed) == (3, 0)
    batch_id = store.batches.newest(str(busy.input), str(busy.output)).id  # type: ignore[union-attr]
    assert [store.decisions.of_run(record_run_id(batch_id, i)) for i in range(3)] == [[], [], []]

    full = BatchFiles.of(inputs, tmp_path / "full.jsonl")
    progress = execute(store, provider, ref, full, gate=gate_of(store, [seen(disk_free_gb=0.2)]))
    assert (progress.done, progress.failed) == (0, 3)
    assert all("GB of disk free" in f["reason"] for f in lines_of(full.failed))


def test_a_record_that_is_not_utf8_or_too_large_fails_naming_its_line_and_only_newlines_end_records(
    store: Store, tmp_path: Path
) -> None:
    """A record is refused as `plait run` refuses an input file: invalid UTF-8 is not replaced
    with U+FFFD and sent to the model, a record over 10 MiB is read past and refused (it made a
    252 MB database), and a lone `\\r` does not end a record (`\\r\\n` does)."""
    provider = script(tmp_path, [{"output": {"text": "clean"}}])
    huge = json.dumps({"text": "x" * (MAX_RECORD_BYTES + 1)}).encode()
    path = tmp_path / "in.jsonl"
    path.write_bytes(
        b'{"text": "crlf"}\r\n'  # line 1: a Windows line end
        + b'{"text": "caf\xe9"}\n'  # line 2: Latin-1, not UTF-8
        + huge + b"\n"  # line 3
        + b'{"text": "a"}\r{"text": "b"}\n'  # line 4: one record (not two), not JSON
        + b'{"text": NaN}\n'  # line 5: NaN is not JSON
        + '{"text": "café"}'.encode()  # line 6, no line end
    )  # fmt: skip
    files = BatchFiles.of(path, tmp_path / "out.jsonl")
    progress = execute(store, provider, graph(tmp_path), files)
    assert (progress.total, progress.done, progress.failed) == (6, 2, 4)
    assert sorted(d["index"] for d in lines_of(files.output)) == [0, 5]
    failed = {f["line"]: f["reason"] for f in lines_of(files.failed)}
    assert failed[2] == "not UTF-8 text (byte 0xe9 at offset 13)"
    assert failed[3] == f"the record is {len(huge) / 1048576:.1f} MiB; the limit is 10.0 MiB per record"
    assert failed[4].startswith("not JSON: Extra data")
    assert failed[5] == "not JSON: NaN is not a JSON number"
    assert len(store.runs.list(limit=100)) == 2  # nothing refused reached a run, or the model
