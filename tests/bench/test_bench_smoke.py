"""The benchmarks run and print their tables (no timing assertions: targets live in the benchmarks)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "engine_vs_langgraph.py"


def test_engine_benchmark_smoke_run_prints_its_table() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--plait-only", "--runs", "20", "--w1-trials", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "LangGraph: skipped (--plait-only)" in out
    for title in ("W1 100-node chain, µs per node", "W2 20 runs of 1->8->merge, wall s", "W3 KiB per in-flight run"):
        assert title in out, out
    assert "targets:" in out
    number = r"\s+[0-9]+(?:\.[0-9]+)?"
    for label in ("Plait LLM_CALL, SQLite", "Plait TRANSFORM, SQLite", "Plait, SQLite"):
        figures = re.search(rf"^  {re.escape(label)}{number}{number}", out, re.MULTILINE)
        assert figures, f"no figures for {label}:\n{out}"
    assert re.search(r"calibration loop .* ms: min [0-9.]+", out)


def test_sandbox_benchmark_prints_each_step() -> None:
    command = [sys.executable, str(ROOT / "bench" / "sandbox.py"), "--quick"]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = (
        "from spawn to ready",
        "a new context",
        "pipe round trip",
        "evaluate, small expression, from a thread",
        "aevaluate, one at a time on an event loop",
        "150 KB scope",
        "a kill at a 50 ms limit",
    )
    for step in steps:
        assert re.search(rf"{re.escape(step)}[^\n]*: [0-9.]+ (µs|ms)", proc.stdout), proc.stdout


def test_health_under_load_benchmark_prints_its_figures() -> None:
    """One round of every kind of hostile run, its MAP of 4 items (not 40): the smoke run that
    every line is printed, not a measure."""
    command = [sys.executable, str(ROOT / "bench" / "health_under_load.py"), "--runs", "1", "--kills", "2",
               "--items", "4", "--quiet", "1"]  # fmt: skip
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for line in ("health, quiet:", "health, under attack:"):
        assert re.search(rf"{line} +[0-9]+ answers: p50 [0-9.]+ ms, p95 [0-9.]+ ms, max [0-9.]+ ms", proc.stdout), (
            proc.stdout
        )
    assert re.search(r"past the limit .*: p50 [0-9]+ ms, max [0-9]+ ms", proc.stdout), proc.stdout


def test_streaming_benchmark_prints_each_measure() -> None:
    command = [sys.executable, str(ROOT / "bench" / "streaming.py"), "--quick"]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for measure in ("first ", "rate ", "parse ", "memory "):
        assert re.search(rf"^{measure}.*[0-9]", proc.stdout, re.MULTILINE), proc.stdout
    assert re.search(r"\(([0-9.]+) % of the node's time\)", proc.stdout), proc.stdout


def test_designer_benchmark_replays_recorded_answers_and_prints_its_figures() -> None:
    recorded = ROOT / "bench" / "recorded" / "designer-gemma-3-270m.json"
    command = [sys.executable, str(ROOT / "bench" / "designer.py"), "--replay", str(recorded),
               "--only", "blog_writer,feedback_triage,edit_limit_tokens"]  # fmt: skip
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for figure in ("valid on the first compile", "never valid", "task success", "designed by the model"):
        assert re.search(rf"{figure}\s+[0-9]+/3", proc.stdout), proc.stdout
    assert re.search(r"new graphs [0-9]+/2, edits [0-9]+/1", proc.stdout), proc.stdout
    assert re.search(r"^  blog_writer\s+proposed", proc.stdout, re.MULTILINE), proc.stdout


@pytest.mark.usefixtures("embedder_installed")
def test_retrieval_benchmark_quick_prints_its_tables_with_figures_in_range() -> None:
    command = [sys.executable, str(ROOT / "bench" / "retrieval.py"), "--quick"]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out, number = proc.stdout, r"([0-9]+(?:\.[0-9]+)?)"
    for mode in ("keyword", "dense", "hybrid"):
        scores = re.search(rf"^  corpus\s+{mode}\s+{number}\s+{number}\s+{number}$", out, re.MULTILINE)
        assert scores, out
        assert all(0 <= float(value) <= 1 for value in scores.groups()), scores.group(0)
        latency = re.search(rf"^\s+2000 {mode}\s+{number}\s+{number}\s+{number}$", out, re.MULTILINE)
        assert latency, out
        assert all(float(value) > 0 for value in latency.groups()), latency.group(0)
    for embedder in ("minilm-l6-int8", "minilm-l6"):
        ingested = re.search(rf"^  {embedder}\s+[0-9]+\s+([0-9]+)\s+{number}\s+{number}\s+[0-9.]+$", out, re.MULTILINE)
        assert ingested, out
        assert all(float(value) > 0 for value in ingested.groups()), ingested.group(0)
    resumed = re.search(r"^  embedded:index\s+ok\s+([0-9]+)\s+([0-9]+)\s+64\s+([0-9]+)\s+0$", out, re.MULTILINE)
    assert resumed, out
    assert int(resumed.group(1)) == int(resumed.group(2)) == 64 + int(resumed.group(3))
    edit = re.search(r"embedded ([0-9]+) \(([0-9.]+) %\)", out)
    assert edit, out
    assert 0 < float(edit.group(2)) <= 100
    whole = re.search(rf"whole client\.kb\.search \(a run\)\s+p50\s+{number}", out)
    assert whole, out
    assert float(whole.group(1)) > 0
