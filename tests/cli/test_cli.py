"""The `plait` command, run as a real subprocess: exit codes, output formats, and no tracebacks for bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import plait
from tests.plait_cli import run_plait

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TRIAGE = "examples/feedback_triage.yaml"
HEAVY = ("sqlalchemy", "fastapi", "openai", "uvicorn", "celery", "llama_cpp")
# `file:line: error category/code [node 'x']: message`
DIAG_LINE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+): error (?P<category>config|planning)/(?P<code>[a-z_]+)( \[.*\])?: .+$"
)


def plait_cli(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PLAIT_DEBUG"} | {"COLUMNS": "200", **env}
    return run_plait(*args, cwd=cwd, env=environment, timeout=60)


def plait_clis(*invocations: tuple[str, ...], **env: str) -> list[subprocess.CompletedProcess[str]]:
    """Several independent invocations at once."""
    with ThreadPoolExecutor(max_workers=len(invocations)) as pool:
        return list(pool.map(lambda args: plait_cli(*args, **env), invocations))


def assert_no_crash(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert "internal error" not in result.stderr, result.stderr


def test_version() -> None:
    result = plait_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"plait {plait.__version__}"


def test_no_arguments_shows_help_and_is_invalid_usage() -> None:
    result = plait_cli()
    assert result.returncode == 2
    assert "validate" in result.stdout + result.stderr


# --- plait validate -------------------------------------------------------------------------------


def test_validate_a_valid_example() -> None:
    result = plait_cli("validate", TRIAGE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"ok  {TRIAGE}  (7 nodes, 9 edges)")
    assert result.stderr == ""


INVALID_GRAPH = """\
id: g
nodes:
  - id: ask
    type: LLM_CALL
    user_prompt_tpl: "{{ input.q }}"
    temprature_override: 1
  - id: route
    type: CONDITON
edges:
  - {source: ask, target: route}
  - {source: ask, target: nowhere}
"""


def test_validate_an_invalid_graph_reports_every_problem_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(INVALID_GRAPH, encoding="utf-8")
    result = plait_cli("validate", str(path))
    assert result.returncode == 2
    assert_no_crash(result)
    assert result.stdout.strip() == f"invalid  {path}  (3 errors)"
    lines = result.stderr.splitlines()
    diags = [m.groupdict() for m in map(DIAG_LINE.match, lines) if m]
    assert sorted((int(d["line"]), d["category"], d["code"]) for d in diags) == [
        (6, "config", "unknown_field"),
        (8, "config", "unknown_node_type"),
        (11, "planning", "dangling_edge"),
    ]
    assert {d["file"] for d in diags} == {str(path)}
    # every diagnostic line is followed by its hint
    for index, line in enumerate(lines):
        if DIAG_LINE.match(line):
            assert lines[index + 1].startswith("    hint: "), lines
    assert "    hint: did you mean 'temperature_override'?" in lines
    assert "    hint: did you mean 'CONDITION'?" in lines
    assert f"{path}:6: error config/unknown_field [node 'ask']: " in result.stderr


def test_validate_json_output(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(INVALID_GRAPH, encoding="utf-8")
    result, ok = plait_clis(("validate", "--json", str(path)), ("validate", "--json", TRIAGE))
    assert result.returncode == 2
    payload = json.loads(result.stdout)
    assert set(payload) == {"valid", "errors", "warnings"}
    assert payload["valid"] is False
    assert payload["warnings"] == []
    keys = {"category", "code", "message", "node_id", "edge_id", "file", "line", "hint"}
    assert all(set(error) == keys for error in payload["errors"])
    by_code = {e["code"]: e for e in payload["errors"]}
    assert set(by_code) == {"unknown_field", "unknown_node_type", "dangling_edge"}
    unknown_type = by_code["unknown_node_type"]
    assert "'CONDITON'" in unknown_type.pop("message")
    assert unknown_type == {
        "category": "config",
        "code": "unknown_node_type",
        "node_id": "route",
        "edge_id": None,
        "file": str(path),
        "line": 8,
        "hint": "did you mean 'CONDITION'?",
    }
    assert by_code["dangling_edge"]["edge_id"] == "ask__nowhere"
    assert by_code["dangling_edge"]["category"] == "planning"

    assert ok.returncode == 0
    assert json.loads(ok.stdout) == {"valid": True, "errors": [], "warnings": []}


def test_validate_a_folder_checks_every_graph_file_in_it(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text((EXAMPLES / "feedback_triage.yaml").read_text(encoding="utf-8"))
    (tmp_path / "b.yml").write_text((EXAMPLES / "blog_writer.yaml").read_text(encoding="utf-8"))
    (tmp_path / "c.json").write_text(json.dumps({"id": "c", "nodes": [{"id": "x", "type": "MERGE"}]}))
    (tmp_path / "d.yaml").write_text(INVALID_GRAPH)
    (tmp_path / "notes.txt").write_text("not a graph: [")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "e.yaml").write_text("not: [valid")  # only files directly inside are checked

    result, as_json = plait_clis(("validate", str(tmp_path)), ("validate", "--json", str(tmp_path)))
    assert result.returncode == 2
    assert_no_crash(result)
    assert result.stdout.splitlines() == [
        f"ok  {tmp_path / 'a.yaml'}  (7 nodes, 9 edges)",
        f"ok  {tmp_path / 'b.yml'}  (3 nodes, 3 edges)",
        f"ok  {tmp_path / 'c.json'}  (1 node, 0 edges, 1 warning)",
        f"invalid  {tmp_path / 'd.yaml'}  (3 errors)",
    ]
    # warnings go to stderr with the errors, and do not make a graph invalid
    assert re.search(
        rf"^{re.escape(str(tmp_path / 'c.json'))}:1: warning planning/merge_single_input ", result.stderr, re.M
    )

    assert as_json.returncode == 2
    payload = json.loads(as_json.stdout)
    assert payload["valid"] is False
    assert payload["files"] == [
        {"file": str(tmp_path / name), "valid": name != "d.yaml"} for name in ("a.yaml", "b.yml", "c.json", "d.yaml")
    ]
    assert {e["file"] for e in payload["errors"]} == {str(tmp_path / "d.yaml")}


def test_validate_the_examples_folder() -> None:
    result = plait_cli("validate", "examples")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(list(EXAMPLES.glob("*.yaml")))
    assert all(line.startswith("ok  examples/") for line in result.stdout.splitlines())


def test_validate_a_missing_path_or_an_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    missing, empty = plait_clis(("validate", str(tmp_path / "nope.yaml")), ("validate", str(tmp_path / "empty")))
    assert missing.returncode == 2
    assert_no_crash(missing)
    assert f"no such file or folder: {tmp_path / 'nope.yaml'}" in missing.stderr
    assert "hint:" in missing.stderr

    assert empty.returncode == 2
    assert_no_crash(empty)
    assert "no graph files" in empty.stderr


def billion_laughs() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


BAD_INPUTS: dict[str, tuple[bytes, str]] = {
    "latin1.yaml": ("id: g\nname: café\n".encode("latin-1"), "encoding"),
    "bom_then_bad_byte.yaml": (b"\xef\xbb\xbfid: g\n\xff\n", "encoding"),
    "deep_brackets.yaml": (b"[" * 10_000, "too_deep"),
    "deep_mappings.yaml": (b"{a: " * 10_000 + b"1" + b"}" * 10_000, "too_deep"),
    "deep.json": (b"[" * 10_000 + b"]" * 10_000, "too_deep"),
    "alias_bomb.yaml": (billion_laughs().encode(), "too_large"),
    "ten_mb.yaml": (b"id: g\n" + (b"# " + b"x" * 1000 + b"\n") * 10_300, "too_large"),
    "bad_indent.yaml": (b"id: g\nnodes:\n  - id: a\n   type: MERGE\n", "parse_error"),
    "unclosed_quote.yaml": (b'id: g\nname: "oops\n', "parse_error"),
    "unclosed_bracket.yaml": (b"id: g\nnodes: [\n", "parse_error"),
    "two_documents.yaml": (b"id: a\n---\nid: b\n", "parse_error"),
    "control_char.yaml": (b"id: g\nname: a\x07b\n", "parse_error"),
    "duplicate_key.yaml": (b"id: g\nid: h\n", "duplicate_key"),
    "bad_tag.yaml": (b"id: g\nnodes:\n  - id: a\n    type: MERGE\n    max_retries: !!int lots\n", "wrong_type"),
    "broken.json": (b'{\n  "id": "g",\n  "nodes": [\n}\n', "parse_error"),
    "lone_surrogate.json": (b'{"id": "g", "name": "\\ud800"}', "parse_error"),
    "empty.yaml": (b"", "wrong_type"),
    "list.yaml": (b"- id: a\n- id: b\n", "wrong_type"),
    "scalar.yaml": (b"hello\n", "wrong_type"),
    "list.json": (b"[1, 2]", "wrong_type"),
}


BadRuns = tuple[Path, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory: pytest.TempPathFactory) -> BadRuns:
    """The folder of bad files, validated as JSON and as text."""
    folder = tmp_path_factory.mktemp("bad_inputs")
    for name, (content, _) in BAD_INPUTS.items():
        (folder / name).write_bytes(content)
    # PLAIT_DEBUG=1 lets an internal error escape as a traceback, so a crash cannot hide here.
    as_json, as_text = plait_clis(("validate", "--json", str(folder)), ("validate", str(folder)), PLAIT_DEBUG="1")
    return folder, as_json, as_text


def test_bad_input_files_are_diagnosed_without_a_traceback(bad_inputs: BadRuns) -> None:
    folder, result, _ = bad_inputs
    assert result.returncode == 2
    assert_no_crash(result)
    payload = json.loads(result.stdout)
    assert payload["files"] == [{"file": str(folder / name), "valid": False} for name in sorted(BAD_INPUTS)]
    codes: dict[str, list[str]] = {}
    for error in payload["errors"]:
        codes.setdefault(Path(error["file"]).name, []).append(error["code"])
        assert error["hint"], error
    assert codes == {name: [code] for name, (_, code) in BAD_INPUTS.items()}


def test_bad_input_files_in_text_mode(bad_inputs: BadRuns) -> None:
    folder, _, result = bad_inputs
    assert result.returncode == 2
    assert_no_crash(result)
    reported = [m for m in map(DIAG_LINE.match, result.stderr.splitlines()) if m]
    assert {Path(m["file"]).name for m in reported} == set(BAD_INPUTS) - {"ten_mb.yaml"}  # size: no line
    assert f"{folder / 'ten_mb.yaml'}: error config/too_large: " in result.stderr
    assert f"{folder / 'bom_then_bad_byte.yaml'}:2: error config/encoding" in result.stderr
    assert f"{folder / 'unclosed_quote.yaml'}:2: error config/parse_error" in result.stderr
    assert f"{folder / 'broken.json'}:4: error config/parse_error" in result.stderr
    assert result.stdout.count("invalid  ") == len(BAD_INPUTS)


def test_valid_json_with_escaped_emoji_validates(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    graph = {"id": "g", "name": "Triage 🚀", "nodes": [{"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "Hi 😀"}]}
    path.write_text(json.dumps(graph, indent=2), encoding="ascii")
    result = plait_cli("validate", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"ok  {path}")


# --- plait graphs show ----------------------------------------------------------------------------


def test_graphs_show_prints_levels_types_and_edge_schemas() -> None:
    result = plait_cli("graphs", "show", TRIAGE)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Feedback triage" in out
    assert "entry classify" in out
    assert "exit summarize" in out
    for level in range(5):
        assert f"level {level}" in out
    assert "level 5" not in out
    for node, kind in [("classify", "LLM_CALL"), ("route", "CONDITION"), ("join", "MERGE"), ("thank", "TRANSFORM")]:
        assert re.search(rf"\b{node}\s+{kind}\b", out), (node, kind, out)
    for schema in ("[label]", "[bug_report]", "[reply]", "[triage_result]"):
        assert schema in out
    assert "when 'bug'" in out
    assert "[free text]" in out
    # levels come in order: classify before route before the branches before join
    assert out.index("classify  LLM_CALL") < out.index("route  CONDITION") < out.index("thank  TRANSFORM")
    assert out.index("thank  TRANSFORM") < out.index("join  MERGE") < out.index("summarize  TRANSFORM")


def test_graphs_show_json() -> None:
    result = plait_cli("graphs", "show", "--json", TRIAGE)
    assert result.returncode == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    assert {"entries", "exits", "levels", "nodes", "edges"} <= set(data)
    assert data["entries"] == ["classify"]
    assert data["exits"] == ["summarize"]
    assert data["levels"] == [["classify"], ["route"], ["file_bug", "thank", "answer"], ["join"], ["summarize"]]
    types = {n["id"]: n["type"] for n in data["nodes"]}
    assert types == {
        "classify": "LLM_CALL",
        "route": "CONDITION",
        "file_bug": "LLM_CALL",
        "thank": "TRANSFORM",
        "answer": "LLM_CALL",
        "join": "MERGE",
        "summarize": "TRANSFORM",
    }
    edges = {e["id"]: e for e in data["edges"]}
    assert len(edges) == 9
    assert edges["classify__route"]["schema_id"] == "label"
    assert edges["route__file_bug"]["condition_key"] == "bug"
    assert edges["summarize__END"] == {
        "id": "summarize__END",
        "source": "summarize",
        "target": "END",
        "schema_id": "triage_result",
        "condition_key": None,
        "label": None,
    }


def test_graphs_show_on_an_invalid_or_missing_graph(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(INVALID_GRAPH, encoding="utf-8")
    result, missing = plait_clis(("graphs", "show", str(path)), ("graphs", "show", str(tmp_path / "nope.yaml")))
    assert result.returncode == 2
    assert_no_crash(result)
    assert result.stdout == ""
    assert f"{path}:8: error config/unknown_node_type" in result.stderr
    assert "is not a valid graph" in result.stderr

    assert missing.returncode == 2
    assert_no_crash(missing)
    assert "no such graph file" in missing.stderr


# --- import weight --------------------------------------------------------------------------------

IMPORT_CHECK = """
import sys
from unittest import mock

code = None
with mock.patch.object(sys, "argv", ["plait", "validate", {path!r}]):
    from plait.cli.app import main

    try:
        main()
    except SystemExit as exc:
        code = exc.code
print(code)
print(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r}))
"""


@pytest.fixture
def stub_heavy_packages(tmp_path: Path) -> dict[str, str]:
    """Importable stand-ins for the heavy packages, so an import shows up even where they are not installed."""
    stubs = tmp_path / "stubs"
    for name in HEAVY:
        (stubs / name).mkdir(parents=True)
        (stubs / name / "__init__.py").write_text("")
    path = os.pathsep.join([str(stubs), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path}


def test_validate_does_not_import_the_store_http_or_provider_stacks(stub_heavy_packages: dict[str, str]) -> None:
    script = IMPORT_CHECK.format(path=TRIAGE, heavy=set(HEAVY))
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=stub_heavy_packages, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    code, modules = result.stdout.strip().splitlines()[-2:]
    assert code == "0"  # it really validated
    assert modules == "[]"


def test_importing_plait_compile_does_not_import_them_either(stub_heavy_packages: dict[str, str]) -> None:
    script = (
        "import sys, plait.compile\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {set(HEAVY)!r}))\n"
        "import importlib; importlib.import_module('sqlalchemy'); print('sqlalchemy' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=stub_heavy_packages, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "True"]  # and the stubs are importable: the check can see them
