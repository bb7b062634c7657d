"""bench/tokens.py --quick does a person's work on a five-node chain (a run, five edits of the
middle node's prompt, two corrections) with Plait and by whole reruns: Plait asks the model only
for what each change reaches, and spends at least 60 % fewer tokens on the front-loaded case (a
ratio of counted tokens, not a speed: the same every time)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOWNSTREAM = ["draft", "critique", "final"]


def test_tokens_benchmark_quick_saves_the_claimed_tokens(tmp_path: Path) -> None:
    figures = tmp_path / "tokens.json"
    command = [sys.executable, str(ROOT / "bench" / "tokens.py"), "--quick", "--json", str(figures)]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for case in ("front-loaded", "flat"):
        assert re.search(rf"^\s+{case}\s+24\s+[0-9]+\s+40\s+[0-9]+\s+[0-9.]+%$", out, re.M), out
    assert re.search(r"^target: >= 60 % fewer tokens .*: met$", out, re.M), out
    written = json.loads(figures.read_text())
    cases = written["cases"]
    front, flat = cases["front-loaded"], cases["flat"]
    assert front["fewer_tokens"] > 0.60
    assert 0 < flat["fewer_tokens"] < front["fewer_tokens"]  # the large input costs once: less to save when flat
    assert sum(front["input_tokens"].values()) >= 2_000
    for case in cases.values():
        plait, naive = case["plait"], case["naive"]
        assert [s["calls"] for s in naive["steps"]] == [5] * 8  # every change a whole run
        assert [s["nodes"] for s in plait["steps"][1:6]] == [DOWNSTREAM] * 5  # an edit: the edited node on
        assert [s["reused"] for s in plait["steps"][1:6]] == [["digest (cache)", "facts (cache)"]] * 5
        assert plait["steps"][6]["nodes"] == DOWNSTREAM  # facts corrected: what it feeds runs again
        assert plait["steps"][7]["nodes"] == ["final"]  # critique corrected
        assert plait["tokens"] == plait["tokens_in"] + plait["tokens_out"] > 0
        assert plait["tokens"] < naive["tokens"]
    assert written["failed"] == []
