"""Benchmark: how long Plait's read-only commands take, whole process, on a small database.

Target (issue: first hour): every read-only command at most 0.35 s median. Each command is run
as a user runs it (`python -m plait ...`, a new process each time), `--repeat` times after one
warm-up run; the table gives the median and the fastest, in seconds. The database is a SQLite
file in a temporary folder holding one completed run of examples/feedback_triage.yaml.

    .venv/bin/python bench/cli_startup.py [--repeat 15] [--markdown]
"""

from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TARGET_S = 0.35


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "plait", *args], cwd=cwd, capture_output=True, text=True, check=False)


def prepare(folder: Path) -> str:
    """A small database with one completed run; returns the run id."""
    inputs, script = EXAMPLES / "inputs" / "feedback_triage.yaml", EXAMPLES / "scripted" / "feedback_triage.yaml"
    done = plait(
        "run", str(EXAMPLES / "feedback_triage.yaml"), "--input-file", str(inputs), "--llm", f"scripted:{script}",
        "--json", "--quiet", cwd=folder,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"could not prepare the database: {done.stderr}")
    return str(json.loads(done.stdout)["run_id"])


def commands(run_id: str) -> list[list[str]]:
    graph = str(EXAMPLES / "feedback_triage.yaml")
    return [
        ["--help"],
        ["--version"],
        ["validate", graph],
        ["runs", "list"],
        ["runs", "show", run_id],
        ["graphs", "list"],
        ["config", "check"],
    ]


def timed(args: list[str], cwd: Path, repeat: int) -> list[float]:
    plait(*args, cwd=cwd)  # warm-up: bytecode caches, the page cache
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = plait(*args, cwd=cwd)
        times.append(time.perf_counter() - started)
        if result.returncode not in (0, 3):
            raise SystemExit(f"plait {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown (docs/performance.md)")
    options = parser.parse_args()
    # As an installed package has it (pip compiles bytecode on install): a checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would otherwise compile every changed module on every start.
    compileall.compile_dir(str(ROOT / "plait"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        run_id = prepare(folder)
        rows = []
        for args in commands(run_id):
            times = timed(args, folder, options.repeat)
            shown = " ".join("RUN" if a == run_id else a.replace(f"{ROOT}/", "") for a in args)
            rows.append((f"plait {shown}", statistics.median(times), min(times)))
    if options.markdown:
        print("| command | median (s) | fastest (s) |")
        print("| --- | ---: | ---: |")
        for name, median, fastest in rows:
            print(f"| `{name}` | {median:.3f} | {fastest:.3f} |")
    else:
        width = max(len(name) for name, _, _ in rows)
        print(f"{'command':<{width}}  median  fastest  (target: median <= {TARGET_S} s)")
        for name, median, fastest in rows:
            flag = "" if median <= TARGET_S else "  over"
            print(f"{name:<{width}}  {median:6.3f}  {fastest:7.3f}{flag}")
    print(f"\n{options.repeat} runs each, Python {sys.version.split()[0]}, {sys.platform}")


if __name__ == "__main__":
    main()
