"""`plait batch`'s memory stays flat with the number of records, and its throughput at a model
latency under a concurrency limit, next to the ideal.

    .venv/bin/python bench/batch_memory.py [--small 10000] [--large 100000] [--concurrency 64]
    .venv/bin/python bench/batch_memory.py --throughput [--records 20000] [--latency-ms 50]

Memory: `plait batch` (a real process, SQLite, the scripted provider answering at once) over a
JSONL file of `--small` records, then of `--large`; its resident set size is sampled every
0.1 s and the peaks are printed with their ratio (the target: the large batch within 10 % of
the small one's). Throughput: `--records` records whose one model call takes `--latency-ms`,
`--concurrency` at once; the ideal is records × latency / concurrency.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml

GRAPH = {
    "plait": 1,
    "id": "bench_batch",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "nodes": [{"id": "clean", "type": "LLM_CALL", "user_prompt_tpl": "Clean: {{ input.text }}"}],
    "edges": [{"source": "clean", "target": "END"}],
}


def prepare(folder: Path, records: int, latency_ms: int) -> None:
    (folder / "graph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    (folder / "model.yaml").write_text(yaml.safe_dump({"responses": [{"text": "clean", "delay_ms": latency_ms}]}))
    with (folder / "in.jsonl").open("w") as handle:
        for i in range(records):
            handle.write(json.dumps({"text": f"record number {i} with some text to clean"}) + "\n")


def batch(folder: Path, concurrency: int) -> tuple[float, int, dict[str, object]]:
    """(seconds, peak RSS in bytes, its JSON summary) of one `plait batch` over folder/in.jsonl."""
    env = {**os.environ, "PLAIT_DB": f"sqlite:///{folder / 'plait.db'}"}
    files = ["--input-file", "in.jsonl", "--output", "out.jsonl"]
    model = ["--llm", "scripted:model.yaml", "--no-cache"]
    command = [sys.executable, "-m", "plait", "batch", "graph.yaml", *files, *model, "-c", str(concurrency), "--json"]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE)
    watched = psutil.Process(process.pid)
    peak = 0
    while process.poll() is None:
        try:
            peak = max(peak, watched.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    assert process.stdout is not None
    summary = json.loads(process.stdout.read())
    if process.returncode != 0:
        raise SystemExit(f"plait batch failed ({process.returncode}) in {folder}")
    return elapsed, peak, summary


def memory(small: int, large: int, concurrency: int) -> None:
    peaks: dict[int, int] = {}
    for records in (small, large):
        with tempfile.TemporaryDirectory() as folder:
            prepare(Path(folder), records, 0)
            elapsed, peaks[records], _ = batch(Path(folder), concurrency)
        print(f"{records:>8} records: {elapsed:7.1f} s, {records / elapsed:7.1f} records/s, peak RSS "
              f"{peaks[records] / 2**20:7.1f} MiB")  # fmt: skip
    print(f"peak RSS at {large} / at {small}: {peaks[large] / peaks[small]:.3f} (target: at most 1.10)")


def throughput(records: int, latency_ms: int, concurrency: int) -> None:
    """The batch's own time (from its JSON summary: reading the input to the last result) next
    to the ideal, and the whole command's (process start-up, opening the store) beside it."""
    with tempfile.TemporaryDirectory() as folder:
        prepare(Path(folder), records, latency_ms)
        elapsed, _, summary = batch(Path(folder), concurrency)
    ideal = records * latency_ms / 1000 / concurrency
    seconds = float(summary["seconds"])  # type: ignore[arg-type]
    print(f"{records} records at {latency_ms} ms, {concurrency} at once: the batch {seconds:.2f} s "
          f"({records / seconds:.0f} records/s), ideal {ideal:.2f} s ({records / ideal:.0f}/s): "
          f"{seconds / ideal:.3f}× the ideal (target: at most 1.05); the whole command {elapsed:.2f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--throughput", action="store_true")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--latency-ms", type=int, default=50)
    args = parser.parse_args()
    if args.throughput:
        throughput(args.records, args.latency_ms, args.concurrency)
    else:
        memory(args.small, args.large, args.concurrency)


if __name__ == "__main__":
    main()
