"""Every compiler check can fail: one deliberately broken graph per check, in `examples/broken/`.

Each file says what it must produce in its leading comments, one line per diagnostic, in order:

    # expect: planning/cycle node=draft edge=review__draft line=18

`category/code` and `line=` are always checked; `node=` and `edge=` when given; `file=` (relative to
the graph file) when the diagnostic is positioned in another file, e.g. inside a skill. A file must
produce exactly the listed errors: that proves its own check fires, and that its one mistake does
not trip other checks too. Files in `warnings/` must be valid and produce exactly the listed
warnings. The line the user must fix also carries a `# <--` marker, which must agree with `line=`.

Problems that cannot live in a committed YAML file (bad bytes, JSON, size limits) are generated in
`tmp_path` below.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from plait.compile import CompileResult, Diagnostic, compile_file
from plait.compile.source import MAX_BYTES_ENV, MAX_DEPTH
from tests.plait_cli import run_plait

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BROKEN = EXAMPLES / "broken"
ERROR_FILES = sorted(BROKEN.glob("*.yaml"))
WARNING_FILES = sorted((BROKEN / "warnings").glob("*.yaml"))

REQUIRED_ERROR_CODES = {
    "config": {
        "parse_error",
        "duplicate_key",
        "unknown_field",
        "field_not_allowed",
        "missing_field",
        "wrong_type",
        "invalid_value",
        "unknown_node_type",
        "duplicate_id",
        "reserved_id",
        "empty_expression",
        "bad_expression",
        "bad_template",
        "bad_template_path",
        "unknown_schema",
        "invalid_json_schema",
        "bad_semver",
        "tool_without_handler",
        "unknown_edge",
        "unknown_tool",
        "unknown_graph",
        "unknown_skill",
        "invalid_skill",
        "migration_beyond_current",
        "migration_backwards",
        "external_schema_ref",
        "unresolved_schema_ref",
        "unsupported_regex",
        # "encoding" needs bytes that are not UTF-8: generated in test_bad_encoding
    },
    "planning": {
        "cycle",
        "unreachable",
        "no_entry",
        "dangling_edge",
        "missing_condition_key",
        "condition_key_not_a_choice",
        "schema_conflict",
        "not_upstream",
        "data_in_system_prompt",
        "skill_recursion",
    },
}
REQUIRED_WARNING_CODES = {
    "unused_schema",
    "merge_single_input",
    "condition_key_ignored",
    "condition_without_branches",
    "breaking_without_migration",
}
DIAGNOSTIC_KEYS = {"category", "code", "message", "node_id", "edge_id", "file", "line", "hint"}

_EXPECT_RE = re.compile(r"^# expect: (?P<category>\w+)/(?P<code>\w+)(?P<attrs>(?: \w+=\S+)*)\s*$")
_ATTRS = {"node", "edge", "line", "file"}


@dataclass(frozen=True)
class Expected:
    category: str
    code: str
    line: int
    file: Path
    node: str | None = None
    edge: str | None = None

    def __str__(self) -> str:
        where = f" node={self.node}" if self.node else ""
        where += f" edge={self.edge}" if self.edge else ""
        return f"{self.category}/{self.code}{where} {self.file.name}:{self.line}"


def expectations(path: Path) -> list[Expected]:
    """The `# expect:` lines of the file's leading comment block."""
    found: list[Expected] = []
    for text in path.read_text(encoding="utf-8").splitlines():
        if not text.startswith("#"):
            break
        match = _EXPECT_RE.match(text)
        if match is None:
            assert not text.startswith("# expect"), f"{path.name}: malformed expectation {text!r}"
            continue
        attrs = dict(part.split("=", 1) for part in match["attrs"].split())
        assert set(attrs) <= _ATTRS, f"{path.name}: unknown keys in {text!r}"
        assert "line" in attrs, f"{path.name}: every expectation needs line= ({text!r})"
        found.append(
            Expected(
                category=match["category"],
                code=match["code"],
                line=int(attrs["line"]),
                file=(path.parent / attrs.get("file", path.name)).resolve(),
                node=attrs.get("node"),
                edge=attrs.get("edge"),
            )
        )
    return found


def _listing(diags: list[Diagnostic]) -> str:
    return "\n".join(d.format() for d in diags) or "(none)"


def assert_diagnostics(actual: list[Diagnostic], expected: list[Expected]) -> None:
    """Exactly `expected`, in order; every diagnostic positioned and with a hint."""
    assert expected, "a broken graph must state what it expects"
    wanted = "\n  ".join(map(str, expected))
    report = f"\nexpected:\n  {wanted}\ngot:\n{_listing(actual)}"
    assert len(actual) == len(expected), report
    for diag, exp in zip(actual, expected, strict=True):
        assert (str(diag.category), diag.code) == (exp.category, exp.code), report
        assert diag.line == exp.line, report
        assert diag.file is not None, report
        assert Path(diag.file).resolve() == exp.file, report
        if exp.node is not None:
            assert diag.node_id == exp.node, report
        if exp.edge is not None:
            assert diag.edge_id == exp.edge, report
        assert diag.hint, f"no hint: {diag.format()}"


def _ids(path: Path) -> str:
    return path.stem


@pytest.mark.parametrize("path", ERROR_FILES, ids=_ids)
def test_broken_graph_fails_with_its_own_error(path: Path) -> None:
    result = compile_file(path)
    assert not result.valid
    assert result.expanded is None
    assert_diagnostics(result.errors, expectations(path))
    assert all(w.hint for w in result.warnings), _listing(result.warnings)


@pytest.mark.parametrize("path", WARNING_FILES, ids=_ids)
def test_warning_graph_is_valid_with_its_warning(path: Path) -> None:
    result = compile_file(path)
    assert result.valid, _listing(result.errors)
    assert result.expanded is not None
    assert_diagnostics(result.warnings, expectations(path))


@pytest.mark.parametrize("path", ERROR_FILES + WARNING_FILES, ids=_ids)
def test_marker_agrees_with_expected_line(path: Path) -> None:
    """The `# <--` comment a reader sees is the line the test checks."""
    lines = path.read_text(encoding="utf-8").splitlines()
    marked = [i for i, text in enumerate(lines, start=1) if text.rstrip().endswith("# <--")]
    assert len(marked) == 1, f"{path.name}: needs exactly one '# <--' marker, found {marked}"
    own = [e for e in expectations(path) if e.file == path.resolve()]
    assert own, f"{path.name}: no expectation positioned in the file itself"
    assert own[0].line == marked[0]


def test_every_check_has_a_broken_graph() -> None:
    covered: dict[str, set[str]] = {"config": set(), "planning": set()}
    for path in ERROR_FILES:
        for exp in expectations(path):
            covered.setdefault(exp.category, set()).add(exp.code)
    for category, codes in REQUIRED_ERROR_CODES.items():
        assert codes <= covered[category], f"no broken graph for {category}: {sorted(codes - covered[category])}"
    warned = {e.code for path in WARNING_FILES for e in expectations(path)}
    assert warned >= REQUIRED_WARNING_CODES, f"no graph for warnings: {sorted(REQUIRED_WARNING_CODES - warned)}"


def test_each_broken_file_targets_the_check_it_is_named_after() -> None:
    for path in ERROR_FILES + WARNING_FILES:
        first = expectations(path)[0]
        assert path.stem == first.code or path.stem.startswith(first.code + "_"), path.name


def test_five_nested_skills_are_allowed() -> None:
    """The other side of skill_recursion_depth.yaml: its skill chain minus one level is valid."""
    result = compile_file(BROKEN / "skills" / "nest_1.yaml")
    assert result.valid, _listing(result.errors)
    assert result.expanded is not None
    assert [n.id for n in result.expanded.nodes] == ["__level_2____level_3____level_4____level_5____level_6__summarize"]


# --- problems generated on the fly ------------------------------------------------------------

VALID_HEAD = "plait: 1\nid: generated\nnodes:\n  - id: normalise\n    type: TRANSFORM\n"


def _only_error(result: CompileResult, code: str, line: int | None) -> Diagnostic:
    assert not result.valid
    assert len(result.errors) == 1, _listing(result.errors)
    diag = result.errors[0]
    assert (str(diag.category), diag.code, diag.line) == ("config", code, line), diag.format()
    assert diag.hint
    return diag


def test_bad_encoding(tmp_path: Path) -> None:
    path = tmp_path / "encoding.yaml"
    text = VALID_HEAD + "    label: Caf\udce9 au lait\n" + '    transform_expr: "({text: input.text})"\n'
    path.write_bytes(text.encode("utf-8", "surrogateescape"))  # a lone Latin-1 0xE9 byte on line 6
    diag = _only_error(compile_file(path), "encoding", 6)
    assert "0xe9" in diag.message


def test_too_deep(tmp_path: Path) -> None:
    path = tmp_path / "too_deep.yaml"
    nested = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    path.write_text(VALID_HEAD + '    transform_expr: "1"\n    label: ' + nested + "\n", encoding="utf-8")
    _only_error(compile_file(path), "too_deep", 7)


def test_too_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "too_large.yaml"
    path.write_text(VALID_HEAD + '    transform_expr: "1"\n', encoding="utf-8")
    monkeypatch.setenv(MAX_BYTES_ENV, "32")
    _only_error(compile_file(path), "too_large", None)


def test_json_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "parse_error.json"
    path.write_text('{\n  "id": "g",\n  "nodes": [\n    {"id": "a", "type": "MERGE"},\n  ]\n}\n', encoding="utf-8")
    _only_error(compile_file(path), "parse_error", 5)  # the trailing comma of line 4 is found on line 5


def test_json_duplicate_key(tmp_path: Path) -> None:
    path = tmp_path / "duplicate_key.json"
    path.write_text(
        '{\n  "id": "g",\n  "nodes": [\n    {"id": "a",\n     "type": "MERGE",\n     "type": "MERGE"}\n  ]\n}\n',
        encoding="utf-8",
    )
    _only_error(compile_file(path), "duplicate_key", 6)


# --- the CLI ----------------------------------------------------------------------------------


def _validate_json(target: Path) -> tuple[int, dict[str, object]]:
    proc = run_plait("validate", str(target), "--json", cwd=ROOT, timeout=60)
    return proc.returncode, json.loads(proc.stdout)


def test_cli_json_for_a_broken_graph() -> None:
    path = BROKEN / "cycle.yaml"
    code, payload = _validate_json(path)
    assert code == 2
    assert set(payload) == {"valid", "errors", "warnings"}
    assert payload["valid"] is False
    assert payload["warnings"] == []
    errors = payload["errors"]
    assert isinstance(errors, list)
    assert errors
    for error in errors:
        assert set(error) == DIAGNOSTIC_KEYS
        assert isinstance(error["hint"], str)
        assert error["hint"].strip()
        assert error["message"]
        assert Path(error["file"]).resolve() == path
    exp = expectations(path)[0]
    assert [(e["category"], e["code"], e["node_id"], e["edge_id"], e["line"]) for e in errors] == [
        (exp.category, exp.code, exp.node, exp.edge, exp.line)
    ]


def test_cli_json_for_a_warning_graph() -> None:
    path = BROKEN / "warnings" / "unused_schema.yaml"
    code, payload = _validate_json(path)
    assert code == 0
    assert payload["valid"] is True
    assert payload["errors"] == []
    warnings = payload["warnings"]
    assert isinstance(warnings, list)
    assert [(w["code"], w["line"]) for w in warnings] == [("unused_schema", expectations(path)[0].line)]
    assert all(set(w) == DIAGNOSTIC_KEYS and w["hint"] for w in warnings)


def test_cli_every_example_is_valid() -> None:
    code, payload = _validate_json(EXAMPLES)
    assert payload["errors"] == [], json.dumps(payload["errors"], indent=2)
    assert code == 0
    assert payload["valid"] is True
    files = payload["files"]
    assert isinstance(files, list)
    assert sorted(Path(f["file"]).name for f in files) == sorted(p.name for p in EXAMPLES.glob("*.yaml"))
    assert all(f["valid"] for f in files)
