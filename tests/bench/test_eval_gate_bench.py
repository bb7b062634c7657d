"""bench/eval_gate.py --quick runs the gate's measures on both example graphs and prints each
verdict's lines, the cost and time tables; the verdicts are the ones its candidates are made to
get (no timings asserted: the figures live in docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_eval_gate_benchmark_quick_reaches_the_expected_verdicts(tmp_path: Path) -> None:
    figures = tmp_path / "eval_gate.json"
    command = [sys.executable, str(ROOT / "bench" / "eval_gate.py"), "--quick", "--json", str(figures)]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "   verdict: fail (exit 1)" in out
    assert "   verdict: pass (exit 0)" in out
    assert "     fail         regressions 3 > 2 allowed" in out
    assert "check: every verdict as expected; mixed gave the same verdict twice" in out
    written = json.loads(figures.read_text())
    assert set(written["graphs"]) == {"feedback_triage", "video_chapters"}
    for slug, graph in written["graphs"].items():
        assert graph["setup"]["gate"]["labels"] == {"corrected": 10, "approved": 10}, slug
        assert graph["setup"]["scale"]["labels"] == {"corrected": 20, "approved": 20}, slug
        verdicts = graph["verdicts"]
        assert verdicts["mixed"]["outcomes"] == {"fixed": 6, "regressed": 3, "still_wrong": 4, "still_right": 7}
        assert verdicts["mixed"]["status"] == verdicts["mixed (again)"]["status"] == "fail"
        assert verdicts["mixed"]["lines"] == verdicts["mixed (again)"]["lines"]
        assert verdicts["clean"]["status"] == "pass"
        node, run = graph["cost"]["scale"], graph["cost"]["scale-run"]
        assert node["calls"] == node["cases"] == 40  # one call per case: only the judged node runs
        assert run["calls"] > node["calls"]
        assert [t["concurrency"] for t in graph["time"]] == [4, 64, 64]
        assert all(t["cases"] == 40 and t["seconds"] > 0 for t in graph["time"])
    feedback, video = written["graphs"]["feedback_triage"], written["graphs"]["video_chapters"]
    assert feedback["verdicts"]["breaking"]["outcomes"] == {"incomparable": 20}  # no migration: nothing to compare
    assert feedback["verdicts"]["breaking"]["status"] == "inconclusive"
    assert feedback["verdicts"]["migrated"]["status"] == "pass"
    assert video["verdicts"]["breaking"]["run_level"] == 20  # chapter_split's input unreadable: whole runs
    assert video["cost"]["scale-run"]["outcomes"] == {"incomparable": 40}  # its runs wait for the review
