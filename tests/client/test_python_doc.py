"""docs/python.md is executed: every example, in order, from the repository's root, on the
scripted provider; a top-level `print(...)  # value` must print that value."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "python.md"
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
_EXPECTED = re.compile(r"^print\((.*)\)\s+# (.*)$", re.M)


def _checked(block: str) -> str:
    """The block with each top-level `print(X)  # V` turned into a check that it prints V."""
    return _EXPECTED.sub(lambda m: f"__expect({m.group(2)!r}, {m.group(1)})", block)


def _expect(expected: str, *values: Any) -> None:
    printed = " ".join(str(v) for v in values)
    assert printed == expected, f"the page says {expected!r}, the code printed {printed!r}"


def test_every_example_on_the_page_runs_and_prints_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = _BLOCK.findall(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 6, "the page lost its examples"
    assert sum(len(_EXPECTED.findall(b)) for b in blocks) >= 8, "the page lost the values it promises"
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PLAIT_DB", str(tmp_path / "doc.db"))
    scope: dict[str, Any] = {"__expect": _expect, "__name__": "python_doc"}
    for index, block in enumerate(blocks):
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(_checked(block), f"docs/python.md block {index + 1}", "exec"), scope)
            except Exception as exc:
                raise AssertionError(f"block {index + 1} of docs/python.md failed: {exc!r}\n{block}") from exc
