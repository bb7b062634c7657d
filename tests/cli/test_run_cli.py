"""`plait run`, `plait resume`, `plait runs list|show` as a user runs them: real processes, real SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from plait.store import Store
from plait.testing import wait_for
from tests.plait_cli import run_plait, start_plait

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, timeout=120)


def example_args(name: str) -> list[str]:
    return [
        str(EXAMPLES / f"{name}.yaml"),
        "--input-file",
        str(EXAMPLES / "inputs" / f"{name}.yaml"),
        "--llm",
        f"scripted:{EXAMPLES / 'scripted' / f'{name}.yaml'}",
    ]


def test_run_prints_the_output_and_runs_are_listed_and_shown(tmp_path: Path) -> None:
    done = plait("run", *example_args("feedback_triage"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"label": "bug", "action": "bug filed: Crash when uploading photos over 10 MB"}
    assert "completed" in done.stderr
    # no .plait/ folder from here up: the per-user store, created on first use
    assert (Path(os.environ["PLAIT_HOME"]) / "plait.db").is_file()
    assert not (tmp_path / ".plait").exists()

    listed = plait("runs", "list", "--json", cwd=tmp_path)
    (run,) = json.loads(listed.stdout)
    assert {"id", "graph_id", "status", "created_at"} <= set(run)
    assert run["status"] == "completed"

    shown = plait("runs", "show", run["id"], "--json", cwd=tmp_path)
    detail = json.loads(shown.stdout)
    nodes = {n["node_id"]: n for n in detail["nodes"]}
    assert nodes["classify"]["effective_output"]["label"] == "bug"
    assert nodes["thank"]["status"] == "skipped"
    assert nodes["classify"]["attempts"][0]["usage"]["output"] > 0
    table = plait("runs", "show", run["id"], cwd=tmp_path)
    assert "file_bug" in table.stdout
    assert "completed" in table.stdout


def test_paused_run_exits_3_and_resume_keeps_it_paused(tmp_path: Path) -> None:
    paused = plait("run", *example_args("video_chapters"), "--json", cwd=tmp_path)
    assert paused.returncode == 3, paused.stderr
    summary = json.loads(paused.stdout)
    assert summary["status"] == "paused"
    assert "waiting for a person at review" in paused.stderr
    again = plait(
        "resume", summary["run_id"], "--llm", f"scripted:{EXAMPLES / 'scripted' / 'video_chapters.yaml'}", cwd=tmp_path
    )
    assert again.returncode == 3


def test_failed_run_exits_1_with_the_reason(tmp_path: Path) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text("responses:\n  - node: classify\n    output: {label: complaint}\n")
    failed = plait(
        "run", str(EXAMPLES / "feedback_triage.yaml"), "-i", "feedback=meh", "--llm", f"scripted:{script}", cwd=tmp_path
    )
    assert failed.returncode == 1
    assert "failed" in failed.stderr
    assert failed.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", str(EXAMPLES / "broken" / "cycle.yaml")], "is not a valid graph"),
        (["run", "no_such_graph"], "no graph file or stored graph named 'no_such_graph'"),
        (
            [
                "run",
                str(EXAMPLES / "feedback_triage.yaml"),
                "--llm",
                f"scripted:{EXAMPLES / 'scripted' / 'blog_writer.yaml'}",
            ],
            "the run input does not match",
        ),
        (
            ["run", str(EXAMPLES / "feedback_triage.yaml"), "-i", "feedback=x", "--llm", "local:big"],
            "takes no argument",
        ),
        (
            ["run", str(EXAMPLES / "feedback_triage.yaml"), "-i", "feedback=x", "--llm", "scripted:nope.yaml"],
            "scripted responses file not found",
        ),
        (["run", str(EXAMPLES / "feedback_triage.yaml"), "-i", "feedback=x", "--llm", "gpt"], "unknown --llm"),
        (["run", str(EXAMPLES / "feedback_triage.yaml"), "-i", "novalue"], "bad input 'novalue'"),
        (["resume", "0000"], "0000"),
        (["runs", "show", "0000"], "0000"),
    ],
)
def test_bad_usage_exits_2_with_a_clear_message(tmp_path: Path, args: list[str], message: str) -> None:
    result = plait(*args, cwd=tmp_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_scripted_file_errors_name_the_file_and_field(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("responses:\n  - node: classify\n    output: {label: bug}\n    text: both\n")
    result = plait(
        "run", str(EXAMPLES / "feedback_triage.yaml"), "-i", "feedback=x", "--llm", f"scripted:{script}", cwd=tmp_path
    )
    assert result.returncode == 2
    assert "s.yaml are invalid: responses.0: give exactly one of output, text, tool_calls, error" in result.stderr


def test_stored_graphs_are_listed_and_shown_by_slug(tmp_path: Path) -> None:
    assert plait("run", *example_args("data_cleaning"), cwd=tmp_path).returncode == 0
    listed = json.loads(plait("graphs", "list", "--json", cwd=tmp_path).stdout)
    assert [(g["slug"], g["version"], g["nodes"]) for g in listed if g["source_type"] != "system"] == [
        ("data_cleaning", 1, 3)
    ]
    assert ("plait.video_chapters", "system") in [(g["slug"], g["source_type"]) for g in listed]
    shown = json.loads(plait("graphs", "show", "data_cleaning", "--json", cwd=tmp_path).stdout)
    assert shown["entries"] == ["clean"]
    assert shown["exits"] == ["package"]
    again = plait(
        "run",
        "data_cleaning",
        "--input-file",
        str(EXAMPLES / "inputs" / "data_cleaning.yaml"),
        "--llm",
        f"scripted:{EXAMPLES / 'scripted' / 'data_cleaning.yaml'}",
        "--json",
        cwd=tmp_path,
    )
    assert json.loads(again.stdout)["output"]["quality"] == "good"


def test_run_stream_prints_each_answer_on_stderr_as_it_arrives_and_only_the_result_on_stdout(tmp_path: Path) -> None:
    done = plait("run", *example_args("feedback_triage"), "--stream", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["label"] == "bug"  # stdout: the result alone, still piped as JSON
    lines = done.stderr.splitlines()
    at = lines.index("── file_bug ──")
    assert json.loads(lines[at + 1]) == {"title": "Crash when uploading photos over 10 MB", "severity": "high"}
    assert lines[at + 2] == "── file_bug: done ──"
    assert "── classify ──" in lines

    one = plait("run", *example_args("feedback_triage"), "--stream-node", "classify", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert "── classify ──" in one.stderr.splitlines()
    assert "── file_bug ──" not in one.stderr


def test_runs_watch_follows_a_run_another_process_executes_until_it_ends(tmp_path: Path) -> None:
    answers = tmp_path / "slow.yaml"
    answers.write_text(
        "responses:\n  - {node: classify, output: {label: question}, delay_ms: 2000}\n"
        "  - {node: answer, output: {reply: See the Settings page.}}\n"
    )
    graph = str(EXAMPLES / "feedback_triage.yaml")
    (tmp_path / ".plait").mkdir()  # this folder's own store, which the test reads
    runner = start_plait("run", graph, "-i", "feedback=How?", "--llm", f"scripted:{answers}", "-q", cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        with Store(f"sqlite:///{tmp_path / '.plait' / 'plait.db'}") as store:
            run_id = wait_for(lambda: next(iter(r.id for r in store.runs.list(limit=1)), None), timeout=60,
                              what="the other process to create its run")  # fmt: skip
        watched = plait("runs", "watch", run_id, "--queue", "none", cwd=tmp_path)
        assert watched.returncode == 0, watched.stderr
        assert json.loads(watched.stdout) == {"label": "question", "action": "answered"}
        assert "node:complete  classify" in watched.stderr  # the progress it saw, read from the store
    finally:
        assert runner.wait(timeout=120) == 0


def test_an_empty_listing_names_the_store_it_read_and_why_that_one(tmp_path: Path) -> None:
    here = plait("runs", "list", cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    own = Path(os.environ["PLAIT_HOME"]) / "plait.db"
    assert f"no runs in the store sqlite:///{own} (the nearest .plait/ folder from here, else your own" in here.stderr
    named = plait("schedules", "list", "--db", str(tmp_path / "other.db"), cwd=tmp_path)
    assert named.stderr.strip() == f"no schedules in the store sqlite:///{tmp_path / 'other.db'}"  # --db: no why
