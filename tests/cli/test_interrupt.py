"""Ctrl-C and SIGTERM during `plait run`: real `plait` processes, a real SQLite file, real signals.

The model call is slow (a scripted `delay_ms`, or the embedded model writing a long answer), the
signal arrives while it is in flight: the run is given back and stays resumable, the process
says how to resume and exits 130, and never crashes; a second Ctrl-C ends it at once.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from llm_helpers import needs_local

from tests.plait_cli import run_plait

pytestmark = pytest.mark.usefixtures("folder_store")  # the tests open the folder's store


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GRAPH = EXAMPLES / "feedback_triage.yaml"
INPUT = ["--input-file", str(EXAMPLES / "inputs" / "feedback_triage.yaml")]
FAST = f"scripted:{EXAMPLES / 'scripted' / 'feedback_triage.yaml'}"

LONG_ANSWER = """plait: 1
id: long_answer
name: Long answer
input_schema: {type: object, properties: {topic: {type: string}}, required: [topic]}
nodes:
  - id: write
    type: LLM_CALL
    system_prompt: "You are a storyteller who never stops."
    user_prompt_tpl: "List 300 different {{ input.topic }}, one per line, numbered."
    token_budget_output: 2000
    cache: false
edges: []
"""


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, timeout=120)


def start(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "plait", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def slow_script(tmp_path: Path) -> str:
    script = tmp_path / "slow.yaml"
    script.write_text("responses:\n  - node: classify\n    delay_ms: 60000\n    output: {label: bug}\n")
    return f"scripted:{script}"


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"plait ended before {what}: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def node_running(db: Path) -> bool:
    if not db.is_file():
        return False
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT 1 FROM prompt_node_run WHERE status = 'running'").fetchone() is not None
    except sqlite3.OperationalError:  # the schema is still being created
        return False


def the_run(tmp_path: Path) -> dict[str, object]:
    (run,) = json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout)
    detail: dict[str, object] = json.loads(plait("runs", "show", str(run["id"]), "--json", cwd=tmp_path).stdout)
    return detail


def assert_given_back(process: subprocess.Popen[str], tmp_path: Path) -> str:
    """The process exited 130 saying how to resume; no node is left `running` and no lease held."""
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr  # a segfault is -11, a plain SIGTERM death -15
    detail = the_run(tmp_path)
    run_id = str(detail["id"])
    assert f"interrupted: resume with plait resume {run_id}" in stderr
    assert "Traceback" not in stderr
    assert detail["status"] not in ("completed", "failed")
    assert all(node["status"] != "running" for node in detail["nodes"])  # type: ignore[attr-defined]
    with sqlite3.connect(tmp_path / ".plait" / "plait.db") as conn:
        (lease,) = conn.execute("SELECT lease_owner FROM prompt_graph_run WHERE id = ?", (run_id,)).fetchone()
    assert lease is None
    return run_id


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_a_model_call_gives_the_run_back_and_resume_completes_it(
    tmp_path: Path, signum: signal.Signals
) -> None:
    calls = tmp_path / "calls.jsonl"
    process = start("run", str(GRAPH), *INPUT, "--llm", slow_script(tmp_path), cwd=tmp_path,
                    env={"PLAIT_SCRIPTED_LOG": str(calls)})  # fmt: skip
    wait_for(calls.is_file, process, "the model call")
    process.send_signal(signum)
    run_id = assert_given_back(process, tmp_path)

    resumed = plait("resume", run_id, "--llm", FAST, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["label"] == "bug"


def test_a_second_ctrl_c_quits_at_once(tmp_path: Path) -> None:
    """The first Ctrl-C waits for the give-up, which here waits for the database (another process
    holds its write lock); a second Ctrl-C ends the process there and then, and the run is
    resumed like one whose process was killed."""
    calls = tmp_path / "calls.jsonl"
    process = start("run", str(GRAPH), *INPUT, "--llm", slow_script(tmp_path), cwd=tmp_path,
                    env={"PLAIT_SCRIPTED_LOG": str(calls)})  # fmt: skip
    wait_for(calls.is_file, process, "the model call")
    blocker = sqlite3.connect(tmp_path / ".plait" / "plait.db", isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # the give-up's write now waits (busy_timeout: 5 s)
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert process.poll() is None, "the first Ctrl-C should still be waiting for the give-up"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=3)  # well before the lock would let the give-up through
    finally:
        blocker.rollback()
        blocker.close()
    assert process.returncode == -signal.SIGINT, stderr  # what a shell reports as 130
    assert "press Ctrl-C again to quit at once" in stderr
    run_id = str(the_run(tmp_path)["id"])
    resumed = plait("resume", run_id, "--llm", FAST, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr


@needs_local
def test_ctrl_c_during_an_embedded_model_generation_never_crashes(tmp_path: Path) -> None:
    """llama.cpp generates on a native thread: the first Ctrl-C stops it at its next token and
    waits for it before the interpreter exits (it used to end in a segfault, exit -11)."""
    graph = tmp_path / "long_answer.yaml"
    graph.write_text(LONG_ANSWER)
    # A numbered list is what the small model keeps writing to its budget (~15 s here); a story
    # prompt got a one-line answer from some llama.cpp builds, and the run ended before the signal.
    process = start("run", str(graph), "-i", "topic=animals", "--llm", "local", cwd=tmp_path)
    wait_for(lambda: node_running(tmp_path / ".plait" / "plait.db"), process, "the model call")
    time.sleep(1.5)  # the model loads, then generates for far longer than this
    process.send_signal(signal.SIGINT)
    run_id = assert_given_back(process, tmp_path)

    # Resuming needs no second long generation (~40 s of CI time): a scripted answer shows the
    # run was given back whole and completes.
    answers = tmp_path / "answers.yaml"
    answers.write_text("responses:\n  - output: {text: '1. cats'}\n")
    resumed = plait("resume", run_id, "--llm", f"scripted:{answers}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr


PARALLEL = {
    "id": "two_answers",
    "nodes": [
        {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "First"},
        {"id": "b", "type": "LLM_CALL", "user_prompt_tpl": "Second"},
        {"id": "both", "type": "TRANSFORM", "transform_expr": "({a: nodes.a, b: nodes.b})"},
    ],
    "edges": [
        {"source": "a", "target": "both"},
        {"source": "b", "target": "both"},
        {"source": "both", "target": "END"},
    ],
}


def test_ctrl_c_keeps_the_answers_that_arrived_and_resume_pays_for_nothing_again(tmp_path: Path) -> None:
    """Two model answers arrive while their commit waits (another process holds the database's
    write lock); Ctrl-C then stops the run, but only once the answers are recorded: resuming asks
    the model nothing again (they used to be thrown away and paid a second time)."""
    import threading

    import yaml

    from tests.worker.counting_server import counting_server, openai_config

    (tmp_path / "graph.yaml").write_text(yaml.safe_dump(PARALLEL))
    gate = threading.Event()
    with counting_server(latency_s=0.0, gate=gate) as (url, counts):
        (tmp_path / "plait.toml").write_text(openai_config(url))
        env = {"PLAIT_CONFIG": str(tmp_path / "plait.toml")}
        process = start("run", "graph.yaml", "--json", cwd=tmp_path, env=env)
        said: list[str] = []
        reader = threading.Thread(target=lambda: said.extend(iter(process.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
        reader.start()
        wait_for(lambda: len(counts.arrivals) == 2, process, "both model calls")
        blocker = sqlite3.connect(tmp_path / ".plait" / "plait.db", isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")  # the answers' commit waits, then is tried again
            gate.set()
            wait_for(lambda: any("the database failed a commit" in line for line in said), process, "a commit to wait")
            process.send_signal(signal.SIGINT)
            wait_for(lambda: any("plait: stopping" in line for line in said), process, "the stop to begin")
        finally:
            blocker.rollback()
            blocker.close()
        process.wait(timeout=60)
        reader.join(timeout=10)
        assert process.returncode == 130, "".join(said)
        run_id = str(the_run(tmp_path)["id"])
        nodes = {n["node_id"]: n["status"] for n in the_run(tmp_path)["nodes"]}  # type: ignore[attr-defined]
        assert (nodes["a"], nodes["b"]) == ("completed", "completed")  # recorded before the process stopped
        resumed = run_plait("resume", run_id, "--json", cwd=tmp_path, env={**os.environ, **env}, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["output"] == {"a": "ok", "b": "ok"}
    assert len(counts.arrivals) == 2  # each answer paid once


STREAMED = """
plait: 1
id: streamed_answer
nodes:
  - id: write
    type: LLM_CALL
    user_prompt_tpl: "Write."
    cache: false
edges: []
"""


def test_kill_9_mid_stream_then_resume_executes_the_node_once(tmp_path: Path) -> None:
    """The process dies while a node's answer streams: nothing of the half answer is kept, and
    resuming asks the model once more for that node, whose answer is then the record."""
    import select

    graph = tmp_path / "streamed.yaml"
    graph.write_text(STREAMED)
    slow, fast, calls = tmp_path / "slow.yaml", tmp_path / "fast.yaml", tmp_path / "calls.jsonl"
    words = " ".join(f"word{i}" for i in range(200))
    slow.write_text(json.dumps({"responses": [{"text": words, "delay_ms": 120000}]}))  # ~0.6 s a word
    fast.write_text(json.dumps({"log": str(calls), "responses": [{"text": "the whole answer"}]}))
    process = start("run", str(graph), "--llm", f"scripted:{slow}", "--stream", cwd=tmp_path)
    assert process.stderr is not None
    seen, deadline = "", time.monotonic() + 60
    while "word1 " not in seen:  # the header, then the first words of the answer
        assert time.monotonic() < deadline, f"no streamed text on stderr: {seen!r}"
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if ready:
            seen += os.read(process.stderr.fileno(), 4096).decode()
    assert "── write ──" in seen
    process.kill()  # SIGKILL: no clean-up of any kind
    process.wait(timeout=30)
    run_id = str(the_run(tmp_path)["id"])
    resumed = plait("resume", run_id, "--llm", f"scripted:{fast}", "--json", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == "the whole answer"
    assert len(calls.read_text().splitlines()) == 1  # the node asked the model once more, not twice
    nodes = the_run(tmp_path)["nodes"]
    assert isinstance(nodes, list)
    assert [(n["node_id"], n["status"]) for n in nodes] == [("write", "completed")]
