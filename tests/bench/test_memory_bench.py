"""bench/memory.py --quick runs the chat's memory over its short conversation and prints its
tables with figures in range (no accuracy or speed asserted: the targets live in the benchmark)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.usefixtures("embedder_installed")
def test_memory_benchmark_quick_prints_tokens_and_accuracy_in_range(tmp_path: Path) -> None:
    figures = tmp_path / "memory.json"
    command = [sys.executable, str(ROOT / "bench" / "memory.py"), "--quick", "--json", str(figures)]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    for turn in ("30", "60", "all"):
        row = re.search(rf"^\s+{turn}\s+([0-9]+)\s+([0-9]+)\s+(-?[0-9.]+)%\s+([0-9]+)\s+(-?[0-9.]+)%$", out, re.M)
        assert row, out
        compressed, full = int(row.group(1)), int(row.group(2))
        assert 0 < compressed < full, row.group(0)
    for turn in ("30", "60"):
        row = re.search(rf"^\s+{turn}\s+([0-9]+)\s+([0-9]+)\s+([0-9]+)\s+([0-9]+)\s+([0-9]+)\s+([0-9]+)\s+"
                        r"([0-9]+)\s+([0-9]+)\s+([0-9]+)$", out, re.M)  # fmt: skip
        assert row, out
        asked, compressed, full, changed, changed_compressed, changed_full, stale, missing, _ = map(int, row.groups())
        assert asked > 0
        assert full == asked  # the whole conversation holds every value said
        assert compressed + stale + missing == asked
        assert changed_compressed <= changed
        assert changed_full == changed
    assert re.search(r"^target: >= 70 % fewer tokens at turn 60.*: (met|NOT met)$", out, re.M), out
    written = json.loads(figures.read_text())
    assert len(written["tokens_per_turn"]) == 60
    assert written["changed"] == 3
    assert [c["turn"] for c in written["checkpoints"]] == [30, 60]
