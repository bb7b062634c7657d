"""Every file a command in the README or docs/ names exists in the repository, so that a reader
can run the command as written (from the repository's root): a graph, an input file, a scripted
answer file, a configuration. Files a command writes (`--output`, `-o`) and copies a block makes
first (`cp SRC DEST`) are not looked for."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)
FILE = re.compile(r"[\w./-]+\.(?:ya?ml|jsonl?|toml|js|py|txt|csv|pdf)")
WRITTEN = {"--output", "-o", "--out"}


def named_files(text: str) -> list[str]:
    """The files that the `plait` commands of `text`'s code blocks read."""
    found: list[str] = []
    for block in FENCE.findall(text):
        made: set[str] = set()
        for raw in block.splitlines():
            line = raw.strip().removeprefix("$ ")
            try:
                words = shlex.split(line, comments=True)
            except ValueError:  # an unfinished quote: a continued line, or prose
                continue
            if words[:1] == ["cp"] and len(words) == 3:  # the copy is made here: only its source must exist
                found.append(words[1])
                made.update({words[2], Path(words[1]).name})
                continue
            if words[:1] != ["plait"]:
                continue
            for before, word in zip(["", *words], words, strict=False):
                path = word.removeprefix("scripted:")
                if before in WRITTEN or not FILE.fullmatch(path) or path in made:
                    continue
                found.append(path)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_file_a_command_names_exists(doc: Path) -> None:
    missing = sorted({f for f in named_files(doc.read_text(encoding="utf-8")) if not (ROOT / f).exists()})
    assert missing == [], f"{doc.name} names files the repository does not have: {missing}"


def test_the_check_sees_the_files_commands_name() -> None:
    text = """
```bash
$ plait run examples/a.yaml --input-file in.json --llm scripted:s.yaml --output out.jsonl  # note.yaml
cp examples/h.yaml .
plait graphs import h.yaml
```
"""
    assert named_files(text) == ["examples/a.yaml", "in.json", "s.yaml", "examples/h.yaml"]
