"""A batch's result files on resume: a half-written last line is cut without reading the whole
file, and the indices already written are held one bit each, bounded by the batch's records."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from plait.runs.batch_results import IndexSet, ResultFile


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        (b'{"index": 0}\n{"index": 1}\n{"ind', b'{"index": 0}\n{"index": 1}\n'),
        (b'{"index": 0}\n', b'{"index": 0}\n'),
        (b'{"index": 0, "output": "' + b"x" * 200_000, b""),  # one cut line longer than a read
        (b'{"index": 0}\n' + b"y" * 150_000, b'{"index": 0}\n'),
        (b"", b""),
    ],
)
def test_resuming_cuts_only_a_half_written_last_line(tmp_path: Path, content: bytes, kept: bytes) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(content)
    ResultFile(path, resume=True).close()
    assert path.read_bytes() == kept


def test_the_indices_in_a_file_are_those_of_its_lines_up_to_the_last_record(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    lines = [{"index": i} for i in (5, 0, 17, 3)] + [{"index": 10**15}, {"index": -2}, {"no": 1}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n")
    found = ResultFile(path, resume=True).indices(last=100)
    assert [i for i in range(200) if i in found] == [0, 3, 5, 17]
    assert 10**15 not in found


def test_an_index_set_holds_what_was_added_and_nothing_else() -> None:
    chosen = set(random.Random(7).sample(range(100_000), 5_000))
    indices = IndexSet()
    for index in chosen:
        indices.add(index)
    assert {i for i in range(100_010) if i in indices} == chosen
    assert -1 not in indices
    assert "3" not in indices
    with pytest.raises(ValueError, match="never negative"):
        indices.add(-1)
