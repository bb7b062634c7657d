"""Reading graph files: values, line numbers, and every way the bytes can be wrong (real files in tmp_path)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from plait.compile import compile_file
from plait.compile.diagnostics import Category, Diagnostic, GraphLoadError
from plait.compile.source import (
    DEFAULT_MAX_BYTES,
    MAX_BYTES_ENV,
    MAX_DEPTH,
    MAX_NODES,
    SourceDoc,
    parse_source,
    read_source,
)


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def read(tmp_path: Path, name: str, content: str | bytes) -> SourceDoc:
    return read_source(write(tmp_path, name, content))


def failure(tmp_path: Path, name: str, content: str | bytes) -> Diagnostic:
    """The one diagnostic reading `content` fails with; it is a positioned config error with a hint."""
    path = write(tmp_path, name, content)
    with pytest.raises(GraphLoadError) as info:
        read_source(path)
    assert len(info.value.diagnostics) == 1, info.value.diagnostics
    diag = info.value.diagnostics[0]
    assert diag.category is Category.CONFIG
    assert diag.file == str(path)
    assert diag.hint
    return diag


# --- line numbers ---------------------------------------------------------------------------------

YAML_DOC = """\
# a comment
id: g
nodes:
  - id: a
    type: MERGE

  - id: b
    type: TRANSFORM
    transform_expr: |
      ({x: 1,
        y: 2})
edges:
  - {source: a, target: b}
"""


def test_yaml_lines_of_keys_and_list_items(tmp_path: Path) -> None:
    doc = read(tmp_path, "g.yaml", YAML_DOC)
    assert doc.data["nodes"][1]["transform_expr"] == "({x: 1,\n  y: 2})\n"
    assert doc.lines[("id",)] == 2
    assert doc.lines[("nodes",)] == 3
    assert doc.lines[("nodes", 0)] == 4
    assert doc.lines[("nodes", 0, "type")] == 5
    assert doc.lines[("nodes", 1)] == 7
    assert doc.lines[("nodes", 1, "transform_expr")] == 9
    assert doc.lines[("edges",)] == 12
    assert doc.lines[("edges", 0)] == 13
    assert doc.lines[("edges", 0, "target")] == 13


def test_line_of_falls_back_to_the_nearest_ancestor(tmp_path: Path) -> None:
    doc = read(tmp_path, "g.yaml", YAML_DOC)
    assert doc.line_of(("nodes", 1, "condition_expr")) == 7  # a missing field: its node's line
    assert doc.line_of(("nodes", 1, "transform_expr")) == 9
    assert doc.line_of(("nope", 3)) == 1


def test_json_lines_of_keys_and_list_items(tmp_path: Path) -> None:
    data = {"id": "g", "nodes": [{"id": "a", "type": "MERGE"}, {"id": "b", "type": "MERGE"}], "edges": []}
    text = json.dumps(data, indent=2)
    lines = text.splitlines()
    doc = read(tmp_path, "g.json", text)
    assert doc.data == data
    assert doc.lines[("id",)] == lines.index('  "id": "g",') + 1
    assert doc.lines[("nodes",)] == lines.index('  "nodes": [') + 1
    second_b = lines.index('      "id": "b",')
    assert doc.lines[("nodes", 1, "id")] == second_b + 1
    assert doc.lines[("nodes", 1)] == second_b  # the `{` line of the item
    assert doc.lines[("nodes", 1, "type")] == second_b + 2
    assert doc.lines[("edges",)] == lines.index('  "edges": []') + 1


# --- duplicate keys -------------------------------------------------------------------------------


def test_duplicate_yaml_key_is_an_error_at_the_second_key(tmp_path: Path) -> None:
    diag = failure(tmp_path, "g.yaml", "id: g\nnodes:\n  - id: a\n    type: MERGE\n    label: x\n    type: LLM_CALL\n")
    assert (diag.code, diag.line) == ("duplicate_key", 6)
    assert "'type'" in diag.message


def test_duplicate_json_key_is_an_error_at_the_second_key(tmp_path: Path) -> None:
    text = '{\n  "id": "g",\n  "nodes": [],\n  "id": "h"\n}\n'
    diag = failure(tmp_path, "g.json", text)
    assert (diag.code, diag.line) == ("duplicate_key", 4)
    assert "'id'" in diag.message


def test_the_same_key_in_different_mappings_is_fine(tmp_path: Path) -> None:
    doc = read(tmp_path, "g.yaml", "a: {id: 1}\nb: {id: 2}\nid: 3\n")
    assert doc.data == {"a": {"id": 1}, "b": {"id": 2}, "id": 3}


# --- values ---------------------------------------------------------------------------------------


def test_json_values_follow_json_not_yaml(tmp_path: Path) -> None:
    text = '{"f": 1e5, "e": 1E-2, "i": 10, "big": 123456789012345678901234567890, "s": "yes", "n": null,\n'
    text += ' "t": true, "neg": -0.0, "d": "2024-01-01", "o": "0x1F", "esc": "a\\/b\\u00e9\\ud83d\\ude00"}'
    data = read(tmp_path, "g.json", text).data
    assert data["f"] == 100000.0
    assert isinstance(data["f"], float)
    assert data["e"] == 0.01
    assert data["i"] == 10
    assert isinstance(data["i"], int)
    assert data["big"] == 123456789012345678901234567890
    assert data["s"] == "yes"
    assert data["n"] is None
    assert data["t"] is True
    assert str(data["neg"]) == "-0.0"
    assert data["d"] == "2024-01-01"
    assert data["o"] == "0x1F"
    assert data["esc"] == "a/bé😀"


def test_json_surrogate_pair_escapes_are_read_even_though_libyaml_rejects_them(tmp_path: Path) -> None:
    # What `json.dumps(..., ensure_ascii=True)` writes for characters outside the BMP.
    data = {"id": "g", "name": "Triage 😀 🚀", "nodes": []}
    doc = read(tmp_path, "g.json", json.dumps(data, indent=2))
    assert doc.data == data


def test_json_lone_surrogate_escape_is_a_parse_error(tmp_path: Path) -> None:
    diag = failure(tmp_path, "g.json", '{\n  "id": "g",\n  "name": "x\\ud800y"\n}\n')
    assert (diag.code, diag.line) == ("parse_error", 3)
    assert "surrogate" in diag.message


def test_yaml_values_follow_yaml_1_1(tmp_path: Path) -> None:
    text = "a: yes\nb: no\nc: 1.5\nd: ~\ne: '1'\nf: 0x1F\ng: 2024-01-01\nh: on\ni: 1e5\nj: !!str 12\n"
    data = read(tmp_path, "g.yaml", text).data
    assert data["a"] is True
    assert data["b"] is False
    assert data["c"] == 1.5
    assert data["d"] is None
    assert data["e"] == "1"
    assert data["f"] == 31
    assert data["g"] == "2024-01-01"  # dates stay strings
    assert data["h"] is True
    assert data["i"] == "1e5"  # YAML 1.1 floats need a dot
    assert data["j"] == "12"


@pytest.mark.parametrize(
    "value", ["!!int x", "!!int ''", "!!float ''", "!!bool maybe", "!!binary 'a'", "1" * 5000, "!foo bar"]
)
def test_scalars_that_cannot_be_built_stay_text(tmp_path: Path, value: str) -> None:
    doc = read(tmp_path, "g.yaml", f"id: g\nlabel: {value}\n")
    assert isinstance(doc.data["label"], str)
    assert doc.lines[("label",)] == 2


def test_json_integer_too_long_for_python_is_a_parse_error(tmp_path: Path) -> None:
    diag = failure(tmp_path, "g.json", '{"id": "g", "n": ' + "1" * 5000 + "}")
    assert diag.code == "parse_error"
    assert "digits" in diag.message


def test_python_tags_are_not_executed(tmp_path: Path) -> None:
    doc = read(tmp_path, "g.yaml", "a: !!python/object/apply:os.system ['echo hi']\nb: !!python/name:os.system x\n")
    assert doc.data == {"a": ["echo hi"], "b": "x"}


# --- documents, encodings -------------------------------------------------------------------------


def test_multi_document_yaml_is_rejected_at_the_second_document(tmp_path: Path) -> None:
    diag = failure(tmp_path, "g.yaml", "id: a\nnodes: []\n---\nid: b\n")
    assert (diag.code, diag.line) == ("parse_error", 3)
    assert "more than one YAML document" in diag.message


def test_a_single_explicit_document_is_fine(tmp_path: Path) -> None:
    assert read(tmp_path, "g.yaml", "---\nid: a\n...\n").data == {"id": "a"}


def test_non_utf8_bytes_are_an_encoding_error_on_their_line(tmp_path: Path) -> None:
    content = "id: g\nname: ok\ndescription: café\n".encode("latin-1")
    diag = failure(tmp_path, "g.yaml", content)
    assert (diag.code, diag.line) == ("encoding", 3)
    assert "0xe9" in diag.message


def test_non_utf8_bytes_after_a_bom_are_reported_at_the_right_line_and_offset(tmp_path: Path) -> None:
    content = b"\xef\xbb\xbfid: g\n\xffname: x\n"
    diag = failure(tmp_path, "g.yaml", content)
    assert (diag.code, diag.line) == ("encoding", 2)
    offset = content.index(b"\xff")
    assert f"0xff at offset {offset}" in diag.message


@pytest.mark.parametrize(("name", "text"), [("g.yaml", "id: g\nname: é\n"), ("g.json", '{"id": "g",\n"name": "é"}')])
def test_utf8_bom_is_accepted(tmp_path: Path, name: str, text: str) -> None:
    doc = read(tmp_path, name, b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert doc.data == {"id": "g", "name": "é"}
    assert doc.lines[("name",)] == 2


def test_control_characters_are_a_parse_error_on_their_line(tmp_path: Path) -> None:
    diag = failure(tmp_path, "g.yaml", "id: g\nname: é ok\nlabel: bell\x07\n")
    assert (diag.code, diag.line) == ("parse_error", 3)
    assert "U+0007" in diag.message


# --- limits: depth, aliases, size -----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[" * 10_000,
        "[" * 10_000 + "]" * 10_000,
        "{a: " * 10_000 + "1" + "}" * 10_000,
        "".join(" " * i + "a:\n" for i in range(2_000)),
        "".join(" " * (2 * i) + "- \n" for i in range(1_000)),
    ],
    ids=["open_brackets", "closed_brackets", "flow_mappings", "block_mappings", "block_lists"],
)
def test_deep_yaml_is_too_deep_not_a_recursion_error(tmp_path: Path, text: str) -> None:
    diag = failure(tmp_path, "g.yaml", text)
    assert diag.code == "too_deep"
    assert str(MAX_DEPTH) in diag.message
    assert diag.line is not None


def test_ten_thousand_nested_block_mappings_are_too_deep() -> None:
    # 10,000 levels of indentation are ~50 MB, past the file size limit: parse the text directly.
    text = "".join(" " * i + "a:\n" for i in range(10_000))
    with pytest.raises(GraphLoadError) as info:
        parse_source(text, file="deep.yaml")
    assert [(d.code, d.line) for d in info.value.diagnostics] == [("too_deep", MAX_DEPTH + 1)]


def test_block_nesting_error_points_at_the_first_line_too_deep(tmp_path: Path) -> None:
    diag = failure(tmp_path, "g.yaml", "".join(" " * i + "a:\n" for i in range(500)))
    assert (diag.code, diag.line) == ("too_deep", MAX_DEPTH + 1)


def test_nesting_up_to_the_limit_is_accepted(tmp_path: Path) -> None:
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    value = read(tmp_path, "ok.yaml", ok).data
    for _ in range(MAX_DEPTH - 1):
        value = value[0]
    assert value == []
    assert failure(tmp_path, "deep.yaml", "[" + ok + "]").code == "too_deep"


@pytest.mark.parametrize(
    "text",
    ["[" * 10_000, "[" * 10_000 + "]" * 10_000, '{"a": ' * 10_000 + "1" + "}" * 10_000, "[" * 500 + "]" * 500],
    ids=["open_brackets", "closed_brackets", "objects", "within_python_recursion"],
)
def test_deep_json_is_too_deep_not_a_recursion_error(tmp_path: Path, text: str) -> None:
    diag = failure(tmp_path, "g.json", text)
    assert diag.code == "too_deep"
    assert str(MAX_DEPTH) in diag.message


def billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_too_large_and_fast(tmp_path: Path) -> None:
    start = time.perf_counter()
    diag = failure(tmp_path, "g.yaml", billion_laughs())
    assert time.perf_counter() - start < 2
    assert diag.code == "too_large"
    assert f"{MAX_NODES:,}" in diag.message
    assert diag.line is not None


def test_modest_aliases_are_fine(tmp_path: Path) -> None:
    doc = read(tmp_path, "g.yaml", "base: &b {type: object}\nx: *b\ny: [*b, *b]\n")
    assert doc.data["y"] == [{"type": "object"}, {"type": "object"}]
    assert doc.lines[("y", 1)] == 3


def test_unknown_alias_is_a_parse_error(tmp_path: Path) -> None:
    diag = failure(tmp_path, "g.yaml", "id: g\nname: *nothing\n")
    assert (diag.code, diag.line) == ("parse_error", 2)


def big_yaml(size: int) -> bytes:
    line = b"# " + b"x" * 1000 + b"\n"
    return b"id: big\n" + line * (size // len(line) + 1)


def test_a_10_mb_file_is_too_large_and_names_the_limit(tmp_path: Path) -> None:
    diag = failure(tmp_path, "g.yaml", big_yaml(10 * 1024 * 1024))
    assert diag.code == "too_large"
    assert f"{DEFAULT_MAX_BYTES / 1048576:.1f} MiB" in diag.message
    assert "10.0 MiB" in diag.message
    assert MAX_BYTES_ENV in (diag.hint or "")


def test_the_size_limit_can_be_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "g.yaml", big_yaml(5 * 1024 * 1024))
    with pytest.raises(GraphLoadError):
        read_source(path)
    monkeypatch.setenv(MAX_BYTES_ENV, str(16 * 1024 * 1024))
    assert read_source(path).data == {"id": "big"}
    monkeypatch.setenv(MAX_BYTES_ENV, "lots")  # not a number: the default applies
    with pytest.raises(GraphLoadError):
        read_source(path)


def test_a_missing_file_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(GraphLoadError) as info:
        read_source(tmp_path / "nope.yaml")
    assert [d.code for d in info.value.diagnostics] == ["unreadable"]


# --- malformed syntax -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("id: g\nnodes:\n  - id: a\n    type: MERGE\n   label: x\n", 5, ""),  # bad indentation
        ("id: g\nname: 1\n  label: x\n", 3, "mapping values are not allowed"),
        ('id: g\nname: "unclosed\nlabel: x\n', 2, "quoted scalar"),  # reported where the quote opens
        ("id: g\nname: 'unclosed\nlabel: x\n", 2, "quoted scalar"),
        ("id: g\nnodes: [a, b\nedges: []\n", 3, "from line 2"),  # unclosed bracket
        ("id: g\nname: {a: 1\nlabel: x\n", 3, "from line 2"),
        ("id: g\n\tname: x\n", 2, ""),  # tab indentation
        ("id: g\nname: @x\n", 2, "cannot start any token"),
        ("id: g\n? [a, b]\n: 1\n", 2, "plain value"),  # a collection as a key
    ],
)
def test_malformed_yaml_is_a_parse_error_with_its_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    diag = failure(tmp_path, "g.yaml", text)
    assert (diag.code, diag.line) == ("parse_error", line)
    assert fragment in diag.message


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('{\n  "id": "g",\n  "nodes": [\n}\n', 4, "Expecting value"),
        ('{\n  "id": "g"\n  "nodes": []\n}\n', 3, "Expecting ',' delimiter"),
        ('{\n  "id": "g",\n}\n', 3, "Expecting property name"),
        ("{\n  \"id\": 'g'\n}\n", 2, "Expecting value"),
        ('{"id": "g"}\n{"id": "h"}\n', 2, "Extra data"),
        ("id: g\n", 1, "Expecting value"),  # YAML in a .json file
        ('{\n  "id": "g",\n  "name": "a\x01b"\n}\n', 3, "Invalid control character"),
    ],
)
def test_malformed_json_is_a_parse_error_with_its_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    diag = failure(tmp_path, "g.json", text)
    assert (diag.code, diag.line) == ("parse_error", line)
    assert diag.message.startswith("invalid JSON: ")
    assert fragment in diag.message


# --- not a mapping --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("g.yaml", "", "empty"),
        ("g.yaml", "# only a comment\n", "empty"),
        ("g.yaml", "- id: a\n- id: b\n", "list"),
        ("g.yaml", "just a string\n", "str"),
        ("g.yaml", "42\n", "int"),
        ("g.json", "[]", "list"),
        ("g.json", '"g"', "str"),
        ("g.json", "null", "empty"),
    ],
)
def test_a_file_that_is_not_a_mapping_is_a_clear_wrong_type_error(
    tmp_path: Path, name: str, content: str, kind: str
) -> None:
    result = compile_file(write(tmp_path, name, content))
    assert [(d.code, d.line) for d in result.errors] == [("wrong_type", 1)]
    assert f"must hold a mapping, not {kind}" in result.errors[0].message
    assert result.errors[0].hint


def test_an_empty_json_file_is_a_parse_error(tmp_path: Path) -> None:
    assert failure(tmp_path, "g.json", "").code == "parse_error"


def test_yaml_merge_keys_copy_unset_keys_with_the_merge_line() -> None:
    text = (
        "base: &base {type: LLM_CALL, max_retries: 2}\n"
        "other: &other {max_retries: 9, label: x}\n"
        "node:\n"
        "  <<: [*base, *other]\n"
        "  id: a\n"
        "  max_retries: 3\n"
        "quoted: {'<<': literal}\n"
    )
    doc = parse_source(text)
    assert doc.data["node"] == {"id": "a", "max_retries": 3, "type": "LLM_CALL", "label": "x"}
    assert doc.lines[("node", "type")] == 4
    assert doc.lines[("node", "max_retries")] == 6
    assert doc.data["quoted"] == {"<<": "literal"}


def test_merge_key_of_a_scalar_is_a_parse_error() -> None:
    with pytest.raises(GraphLoadError) as info:
        parse_source("a: 1\nb:\n  <<: 5\n  c: 2\n")
    assert (info.value.diagnostics[0].code, info.value.diagnostics[0].line) == ("parse_error", 3)
