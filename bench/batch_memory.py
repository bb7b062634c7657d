"""`plait batch`'s memory stays flat with the number of records, and its throughput at a model
latency under a provider's concurrency limit, next to the ideal.

    .venv/bin/python bench/batch_memory.py [--small 10000] [--large 100000] [--concurrency 64]
    .venv/bin/python bench/batch_memory.py --throughput [--records 20000] [--latency-ms 50] [--limit 64]

Memory: `plait batch` (a real process, SQLite, the scripted provider answering at once) over a
JSONL file of `--small` records, then of `--large`; its resident set size is sampled every
0.1 s and the peaks are printed with their ratio (the target: the large batch within 10 % of
the small one's). Throughput: `--records` records whose one model call takes `--latency-ms`,
through a provider whose `max_concurrency = --limit` is the only limit on calls, the batch
running `--concurrency` records at once (default: twice the limit, so that a record's own
work outside its call, its commits and prompt, overlaps other records' calls); the ideal is
ceil(records / limit) × latency. `--no-limit` runs the provider without a limit instead, the
batch's `--concurrency` then being the only bound (and the ideal records × latency / it).
"""

from __future__ import annotations

import argparse
import json
import math
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


def prepare(folder: Path, records: int, latency_ms: int, limit: int | None = None) -> None:
    """The graph, the scripted model answering after `latency_ms`, `records` inputs, and with a
    `limit`, a plait.toml whose provider (that model) takes at most `limit` calls at once."""
    (folder / "graph.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    if limit is not None:
        (folder / "plait.toml").write_text(
            f'[[providers]]\nid = "sleepy"\nkind = "scripted"\nfile = "model.yaml"\nmax_concurrency = {limit}\n'
            'models = [{ name = "m" }]\n\n[roles]\nchat = "sleepy/m"\n'
        )
    (folder / "model.yaml").write_text(yaml.safe_dump({"responses": [{"text": "clean", "delay_ms": latency_ms}]}))
    with (folder / "in.jsonl").open("w") as handle:
        for i in range(records):
            handle.write(json.dumps({"text": f"record number {i} with some text to clean"}) + "\n")


def batch(folder: Path, concurrency: int) -> tuple[float, int, dict[str, object]]:
    """(seconds, peak RSS in bytes, its JSON summary) of one `plait batch` over folder/in.jsonl."""
    env = {**os.environ, "PLAIT_DB": f"sqlite:///{folder / 'plait.db'}"}
    files = ["--input-file", "in.jsonl", "--output", "out.jsonl"]
    pooled = (folder / "plait.toml").exists()
    model = ["--config", "plait.toml"] if pooled else ["--llm", "scripted:model.yaml"]
    model.append("--no-cache")
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


def throughput(records: int, latency_ms: int, limit: int | None, concurrency: int) -> None:
    """The batch's own time (from its JSON summary: reading the input to the last result) next
    to the ideal, and the whole command's (process start-up, opening the store) beside it."""
    with tempfile.TemporaryDirectory() as folder:
        prepare(Path(folder), records, latency_ms, limit)
        elapsed, _, summary = batch(Path(folder), concurrency)
    bound = limit or concurrency
    ideal = math.ceil(records / bound) * latency_ms / 1000
    seconds = float(summary["seconds"])  # type: ignore[arg-type]
    how = f"a provider limit of {limit}, {concurrency} records at once" if limit else f"{concurrency} at once, no limit"
    print(f"{records} records at {latency_ms} ms, {how}: the batch {seconds:.2f} s "
          f"({records / seconds:.0f} records/s), ideal {ideal:.2f} s ({records / ideal:.0f}/s): "
          f"{seconds / ideal:.3f}× the ideal (target: at most 1.05); the whole command {elapsed:.2f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, help="records at once (default: 64; with --throughput, 2 × --limit)")
    parser.add_argument("--throughput", action="store_true")
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--limit", type=int, default=64, help="the provider's max_concurrency (--throughput)")
    parser.add_argument("--no-limit", action="store_true", help="--throughput without a provider limit")
    args = parser.parse_args()
    if args.throughput:
        limit = None if args.no_limit else args.limit
        concurrency = args.concurrency or (64 if limit is None else 2 * limit)
        throughput(args.records, args.latency_ms, limit, concurrency)
    else:
        memory(args.small, args.large, args.concurrency or 64)


if __name__ == "__main__":
    main()
