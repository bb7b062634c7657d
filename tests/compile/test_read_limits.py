"""Graph files are read under the limits of every document: only regular files, at most the size
limit read, and no value that cannot be stored (NaN, infinities, lone surrogates) gets past."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plait.compile import compile_file
from plait.compile.diagnostics import GraphLoadError
from plait.compile.source import parse_source, read_source


def only_error(path: Path) -> tuple[str, str, int | None]:
    result = compile_file(path)
    (diagnostic,) = result.errors
    return diagnostic.code, diagnostic.message, diagnostic.line


def test_dev_zero_is_refused_without_reading_it() -> None:
    code, message, _ = only_error(Path("/dev/zero"))
    assert (code, message) == ("unreadable", "graph file is not a regular file (a device)")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "g.yaml"
    os.mkfifo(fifo)  # no writer: opening it for reading the usual way blocks forever
    assert only_error(fifo)[:2] == ("unreadable", "graph file is not a regular file (a pipe)")


def test_a_directory_named_like_a_graph_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "g.yaml"
    folder.mkdir()
    with pytest.raises(GraphLoadError) as caught:
        read_source(folder)
    assert caught.value.diagnostics[0].message == "graph file is not a regular file (a directory)"


@pytest.mark.parametrize(
    ("name", "text", "where", "line"),
    [
        ("g.yaml", "id: g\nnodes:\n  - id: a\n    type: TRANSFORM\n    weight: .nan\n", "nodes[0].weight: nan", 5),
        ("g.yaml", "id: g\ninput_schema: {maximum: -.inf}\n", "input_schema.maximum: -inf", 2),
        ("g.json", '{"id": "g",\n "input_schema": {"default": NaN}}', "input_schema.default: nan", 2),
        ("g.json", '{"id": "g",\n "input_schema": {"maximum": 1e400}}', "input_schema.maximum: inf", 2),
    ],
)
def test_non_finite_numbers_are_an_invalid_value_at_their_line(
    tmp_path: Path, name: str, text: str, where: str, line: int
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, message, at = only_error(path)
    assert (code, at) == ("invalid_value", line)
    assert message.startswith(f"{where} is not a JSON number")


def test_parsed_text_is_checked_too() -> None:
    with pytest.raises(GraphLoadError) as caught:
        parse_source("id: g\nname: .inf\n")
    assert caught.value.diagnostics[0].code == "invalid_value"
