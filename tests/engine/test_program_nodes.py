"""TOOL and CODE nodes executed by the engine, on SQLite and PostgreSQL: real programs in real
child processes, JavaScript in the sandbox, Python in a child interpreter with limits."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from plait.config import CodeConfig, ToolsConfig
from plait.engine.runner import Engine, EngineError, RunOutcome
from plait.model.enums import RunStatus
from plait.store import Store
from tests.engine.test_engine import execute

SH = shutil.which("sh") or "/bin/sh"
ENV = shutil.which("env") or "/usr/bin/env"
SLEEP = shutil.which("sleep") or "/bin/sleep"
TOOLS = ToolsConfig(allow=(SH, ENV, SLEEP), node_env=("GREETING",), timeout_s=10, max_output_bytes=10_000)
PYTHON = CodeConfig(python=True, timeout_s=5, memory_mb=256)


def run_graph(
    store: Store, tmp_path: Path, nodes: list[dict[str, Any]], run_input: dict[str, Any], **config: Any
) -> tuple[RunOutcome, Store, str]:
    edges = [{"source": a["id"], "target": b["id"]} for a, b in itertools.pairwise(nodes)]
    graph = tmp_path / "graph.yaml"
    graph.write_text(yaml.safe_dump({"id": "programs", "nodes": nodes, "edges": edges}, sort_keys=False))
    outcome = execute(
        store, str(graph), None, run_input, tools=config.get("tools", TOOLS), code=config.get("code", PYTHON)
    )
    return outcome, store, outcome.run_id


def node_error(store: Store, run_id: str, node_id: str) -> dict[str, Any]:
    (row,) = [n for n in store.runs.node_runs(run_id) if n.node_id == node_id]
    assert row.error is not None
    return dict(row.error)


def test_a_tool_gets_each_rendered_template_as_one_argument(store: Store, tmp_path: Path) -> None:
    script = 'for a in "$@"; do printf "<%s>\\n" "$a"; done'
    node = {"id": "t", "type": "TOOL", "command": [SH, "-c", script, "sh", "{{ input.name }}", "x"]}
    outcome, _, _ = run_graph(store, tmp_path, [node], {"name": "a b; rm -rf / $(id)"})
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"text": "<a b; rm -rf / $(id)>\n<x>\n"}  # one argument, never seen by a shell


def test_a_tool_runs_in_a_fresh_directory_with_only_the_allowed_environment(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLAIT_TEST_SECRET", "do-not-pass")
    node = {"id": "t", "type": "TOOL", "command": [ENV], "env": {"GREETING": "hi {{ input.who }}"}}
    outcome, _, _ = run_graph(store, tmp_path, [node], {"who": "there"})
    assert outcome.status == RunStatus.COMPLETED, outcome
    variables = dict(line.split("=", 1) for line in outcome.output["text"].splitlines())
    assert variables["GREETING"] == "hi there"
    assert "PLAIT_TEST_SECRET" not in variables
    assert set(variables) <= {"PATH", "LANG", "LC_ALL", "TZ", "HOME", "TMPDIR", "PWD", "GREETING"}
    assert variables["HOME"] == variables["TMPDIR"] == "/tmp"  # the jail's own in-memory folder


def test_a_program_not_on_the_allow_list_is_refused_before_the_run_starts(store: Store, tmp_path: Path) -> None:
    node = {"id": "t", "type": "TOOL", "command": ["curl", "http://example.com"]}
    with pytest.raises(EngineError, match=r"runs 'curl', which plait.toml \[tools\] allow does not list"):
        run_graph(store, tmp_path, [node], {})


def test_a_non_zero_exit_fails_the_node_quoting_stderr_and_runs_cleanup(store: Store, tmp_path: Path) -> None:
    node = {
        "id": "t",
        "type": "TOOL",
        "command": [SH, "-c", "echo first >&2; echo 'disk full' >&2; exit 3"],
        "cleanup": [SH, "-c", "exit 7"],
    }
    outcome, store, run_id = run_graph(store, tmp_path, [node], {})
    assert outcome.status == RunStatus.FAILED
    error = node_error(store, run_id, "t")
    assert error["kind"] == "tool"
    assert error["message"] == "the program exited with status 3: first | disk full"
    (row,) = store.runs.node_runs(run_id)
    assert row.attempts[0]["cleanup"] == {"exit_code": 7}  # it ran, once, in a jail of its own


@pytest.mark.parametrize(
    ("command", "kind", "message"),
    [
        ([SLEEP, "30"], "timeout", "ran longer than 0.5 s and was stopped"),
        ([SH, "-c", "yes plait | head -c 100000"], "output_too_large", "more than the limit of 10000 bytes"),
        ([SH, "-c", "echo not json"], "parse", "the program's output is not JSON"),
    ],
)
def test_a_tool_that_runs_too_long_prints_too_much_or_prints_no_json_fails(
    store: Store, tmp_path: Path, command: list[str], kind: str, message: str
) -> None:
    node = {"id": "t", "type": "TOOL", "command": command, "timeout_s": 0.5, "parse": "json"}
    outcome, store, run_id = run_graph(store, tmp_path, [node], {})
    assert outcome.status == RunStatus.FAILED
    error = node_error(store, run_id, "t")
    assert (error["kind"], message in error["message"]) == (kind, True), error


@pytest.mark.parametrize(
    "code",
    [
        "return {total: input.items.reduce((a, b) => a + b, 0)};",
        "function main(input, nodes) {\n  return {total: input.items.reduce((a, b) => a + b, 0)};\n}",
        "async function main(input) {\n  await 0;\n  return {total: input.items.reduce((a, b) => a + b, 0)};\n}",
    ],
    ids=["body", "main", "async_main"],
)
def test_javascript_code_runs_in_the_sandbox(store: Store, tmp_path: Path, code: str) -> None:
    node = {"id": "c", "type": "CODE", "code": code}
    outcome, _, _ = run_graph(store, tmp_path, [node], {"items": [1, 2, 3]})
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"total": 6}


def test_javascript_main_throwing_fails_the_node_with_its_position(store: Store, tmp_path: Path) -> None:
    code = "function main(input) {\n  const x = null;\n  return x.field;\n}"
    outcome, store, run_id = run_graph(store, tmp_path, [{"id": "c", "type": "CODE", "code": code}], {})
    assert outcome.status == RunStatus.FAILED
    error = node_error(store, run_id, "c")
    assert error["kind"] == "code"
    assert "cannot read property 'field' of null (line 3" in error["message"]


def test_python_code_runs_in_a_child_and_its_main_returns_the_output(store: Store, tmp_path: Path) -> None:
    code = (
        "import os\n\n"
        "def main(input, nodes):\n"
        "    print('to the log')\n"
        f"    return {{'words': len(input['text'].split()), 'pid_differs': os.getpid() != {os.getpid()}}}\n"
    )
    first = {"id": "p", "type": "CODE", "language": "python", "code": code}
    outcome, _, _ = run_graph(store, tmp_path, [first], {"text": "a b c"})
    assert outcome.status == RunStatus.COMPLETED, outcome
    assert outcome.output == {"words": 3, "pid_differs": True}


def test_python_code_is_refused_unless_plait_toml_allows_it(store: Store, tmp_path: Path) -> None:
    node = {"id": "p", "type": "CODE", "language": "python", "code": "def main(input, nodes):\n    return 1\n"}
    with pytest.raises(EngineError, match=r"set \[code\] python = true"):
        run_graph(store, tmp_path, [node], {}, code=CodeConfig())


@pytest.mark.parametrize(
    ("code", "kind", "message"),
    [
        (
            "def main(input, nodes):\n    x = 1\n    raise ValueError('bad ' + str(x))\n",
            "code_runtime",
            "ValueError: bad 1 (line 3)",
        ),
        ("def main(input, nodes):\n    while True:\n        pass\n", "code_timeout", "ran longer than 1 s"),
        (
            "def main(input, nodes):\n    a = []\n    while True:\n        a.append(bytearray(10**7))\n",
            "code_memory",
            "memory limit of 256 MB",
        ),
        ("def main(input, nodes):\n    return {1, 2}\n", "code_not_json", "not JSON serializable"),
    ],
    ids=["raises", "loops_forever", "eats_memory", "not_json"],
)
def test_python_code_that_fails_fails_its_node_only(
    store: Store, tmp_path: Path, code: str, kind: str, message: str
) -> None:
    # Only the endless loop is meant to reach the time limit; the others get one a loaded host
    # cannot reach while it starts the jail and the interpreter.
    node = {
        "id": "p",
        "type": "CODE",
        "language": "python",
        "code": code,
        "timeout_s": 1 if kind == "code_timeout" else 30,
    }
    outcome, store, run_id = run_graph(store, tmp_path, [node], {})
    assert outcome.status == RunStatus.FAILED
    error = node_error(store, run_id, "p")
    assert error["kind"] == kind
    assert message in error["message"], error


def test_a_cleanup_program_not_on_the_allow_list_is_refused_too(store: Store, tmp_path: Path) -> None:
    node = {"id": "t", "type": "TOOL", "command": [SH, "-c", "exit 1"], "cleanup": ["rm", "-rf", "/tmp/x"]}
    with pytest.raises(EngineError, match=r"its cleanup runs 'rm', which plait.toml \[tools\] allow does not list"):
        run_graph(store, tmp_path, [node], {})


def test_a_corrected_tool_output_reruns_the_code_that_read_it(store: Store, tmp_path: Path) -> None:
    """TOOL and CODE nodes are corrected like any node: override the program's output with
    RERUN, and the CODE node downstream runs again on the corrected value."""
    from plait.model.enums import DownstreamPolicy
    from plait.runs.corrections import Corrections

    tool = {"id": "t", "type": "TOOL", "command": [SH, "-c", "echo 3"]}
    code = {"id": "c", "type": "CODE", "code": "return {double: Number(nodes.t.text) * 2};"}
    outcome, store, run_id = run_graph(store, tmp_path, [tool, code], {})
    assert outcome.output == {"double": 6}
    result = Corrections(store).override(run_id, "t", {"text": "21"}, policy=DownstreamPolicy.RERUN)
    assert result.queued == ["c"]
    engine = Engine(store, None, tools=TOOLS, code=PYTHON)

    async def resume() -> RunOutcome:
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    again = asyncio.run(resume())
    assert again.status == RunStatus.COMPLETED
    assert again.output == {"double": 42}
    latest = max((n for n in store.runs.node_runs(run_id) if n.node_id == "c"), key=lambda n: n.activation)
    assert latest.activation == 2
