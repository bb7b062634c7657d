"""What the CLI says after each command, as a user reads it: real `plait` processes on a real SQLite file.

A failed run names its node's real error and a hint; a paused run prints the review and the
commands that answer it; corrections say what they did; help, piped tables and errors are
formatted for people and scripts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from plait.store import Store
from tests.cli.test_run_cli import EXAMPLES, example_args, plait
from tests.plait_cli import run_plait

pytestmark = pytest.mark.usefixtures("folder_store")  # the tests open the folder's store


VIDEO_SCRIPT = f"scripted:{EXAMPLES / 'scripted' / 'video_chapters.yaml'}"


def plait_env(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, env={**os.environ, **env}, timeout=120)


def paused_video_run(tmp_path: Path) -> str:
    paused = plait("run", *example_args("video_chapters"), "--json", "--quiet", cwd=tmp_path)
    assert paused.returncode == 3, paused.stderr
    return str(json.loads(paused.stdout)["run_id"])


def failed_triage_run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "unmatched.yaml"
    script.write_text("responses:\n  - node: nobody\n    output: {label: bug}\n")
    return plait(
        "run", str(EXAMPLES / "feedback_triage.yaml"), "-i", "feedback=meh", "--llm", f"scripted:{script}", *extra,
        cwd=tmp_path,
    )  # fmt: skip


REAL_ERROR = "no scripted response matches node 'classify' (prompt starts 'Feedback: meh')"


def test_a_failed_run_prints_the_nodes_real_error_and_its_hint(tmp_path: Path) -> None:
    failed = failed_triage_run(tmp_path)
    assert failed.returncode == 1
    assert REAL_ERROR in failed.stderr
    assert "hint: add a response for node 'classify' to the scripted responses file" in failed.stderr

    as_json = failed_triage_run(tmp_path, "--json", "--quiet")
    cause = json.loads(as_json.stdout)["error"]["node_error"]
    assert (cause["node_id"], cause["kind"], cause["message"]) == ("classify", "unmatched", REAL_ERROR)
    assert "scripted responses file" in cause["hint"]

    run_id = json.loads(as_json.stdout)["run_id"]
    shown = plait("runs", "show", run_id, cwd=tmp_path)
    below_table = shown.stdout.split("└")[-1]
    assert REAL_ERROR in below_table  # whole, not cut at the table's column width
    assert "hint: add a response for node 'classify'" in below_table
    detail = json.loads(plait("runs", "show", run_id, "--json", cwd=tmp_path).stdout)
    assert detail["error"]["node_error"]["message"] == REAL_ERROR


def test_a_paused_run_prints_the_review_and_how_to_answer_it(tmp_path: Path) -> None:
    paused = plait("run", *example_args("video_chapters"), cwd=tmp_path)
    assert paused.returncode == 3
    run_id = json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout)[0]["id"]
    for text in (paused.stderr, plait("runs", "show", run_id, cwd=tmp_path).stdout):
        assert "prompt: Check the 3 chapters: titles and timestamps." in text
        assert '"title": "Cutting the pieces"' in text  # the value under review
        assert f"plait review {run_id} review --approve" in text
        assert f"plait review {run_id} review --file F" in text
        assert "_schema_id" not in text
    waiting = json.loads(plait("runs", "show", run_id, "--json", cwd=tmp_path).stdout)["waiting"]
    assert [(w["node_id"], w["review_prompt"]) for w in waiting] == [
        ("review", "Check the 3 chapters: titles and timestamps.")
    ]
    assert waiting[0]["value"]["chapters"][1]["title"] == "Cutting the pieces"


def test_only_human_review_nodes_are_said_to_wait_for_a_person(tmp_path: Path) -> None:
    run_id = paused_video_run(tmp_path)
    with Store(f"sqlite:///{tmp_path / '.plait' / 'plait.db'}") as store:  # an activation given back mid-way
        claim = store.runs.claim_node(run_id, "subtitles", 1, "engine-gone")
        assert claim is not None
        store.runs.give_up(run_id, "engine-gone")
    again = plait("resume", run_id, "--llm", VIDEO_SCRIPT, cwd=tmp_path)
    assert again.returncode == 3, again.stderr
    assert f"run {run_id} paused: waiting for a person at review\n" in again.stderr
    shown = json.loads(plait("runs", "show", run_id, "--json", cwd=tmp_path).stdout)
    assert [w["node_id"] for w in shown["waiting"]] == ["review"]


def test_runs_show_prints_the_input_and_node_run_ids_without_schema_annotations(tmp_path: Path) -> None:
    run_id = paused_video_run(tmp_path)
    shown = plait("runs", "show", run_id, cwd=tmp_path).stdout
    assert 'input: {"transcript": "Welcome to the channel.' in shown
    with Store(f"sqlite:///{tmp_path / '.plait' / 'plait.db'}") as store:
        for record in store.runs.node_runs(run_id):
            assert record.id in shown  # whole: `plait replay` takes it as it is
    assert "_schema_id" not in shown
    assert "_schema_version" not in shown
    as_json = plait("runs", "show", run_id, "--json", cwd=tmp_path).stdout
    assert "_schema_id" in as_json  # kept for scripts


def test_override_prints_the_new_value_and_what_happened_downstream(tmp_path: Path) -> None:
    run_id = paused_video_run(tmp_path)
    chapters = tmp_path / "chapters.json"
    chapters.write_text(json.dumps({"chapters": [{"title": "Intro", "start_sec": 0, "end_sec": 15}]}))
    kept = plait("override", run_id, "chapter_split", "--file", str(chapters), cwd=tmp_path)
    assert kept.returncode == 3, kept.stderr  # the waiting review is opened again, on the new value
    assert json.loads(kept.stdout) == {"chapters": [{"title": "Intro", "start_sec": 0, "end_sec": 15}]}
    assert f"overrode chapter_split of run {run_id} (ledger version 2, policy INVALIDATE)" in kept.stderr
    assert "stale now: clip_points (they read the old value)" in kept.stderr
    assert "rerunning: review\n" in kept.stderr

    rerun = plait(
        "override", run_id, "chapter_split", "--value", '{"chapters": [{"title": "A", "start_sec": 0, "end_sec": 9}]}',
        "--policy", "RERUN", "--llm", VIDEO_SCRIPT, cwd=tmp_path,
    )  # fmt: skip
    assert rerun.returncode == 3, rerun.stderr  # the rerun review waits for a person again
    assert json.loads(rerun.stdout) == {"chapters": [{"title": "A", "start_sec": 0, "end_sec": 9}]}
    assert "rerunning: clip_points, review\n" in rerun.stderr  # the waiting review reads the new value
    assert "downstream: clip_points completed" in rerun.stderr


def test_rollback_prints_the_restored_version_and_the_nodes_marked_stale(tmp_path: Path) -> None:
    run_id = paused_video_run(tmp_path)
    value = '{"chapters": [{"title": "Intro", "start_sec": 0, "end_sec": 15}]}'
    assert plait("override", run_id, "chapter_split", "--value", value, cwd=tmp_path).returncode == 3  # review again
    assert plait("rerun", run_id, "clip_points", "--llm", VIDEO_SCRIPT, cwd=tmp_path).returncode == 3  # reads v2
    back = plait("rollback", run_id, "chapter_split", "--to-version", "1", cwd=tmp_path)
    assert back.returncode == 3, back.stderr  # the waiting review is opened again on it
    assert json.loads(back.stdout)["chapters"][0]["title"] == "Introduction"
    assert f"rolled back chapter_split of run {run_id} to version 1 (recorded as version 3)" in back.stderr
    assert "stale now: clip_points (they read the old value)" in back.stderr
    approved = plait("review", run_id, "review", "--approve", "--llm", VIDEO_SCRIPT, cwd=tmp_path)
    assert approved.returncode == 0, approved.stderr  # once the run has ended, a rollback leaves nothing to run
    facts = json.loads(plait("rollback", run_id, "chapter_split", "--to-version", "2", "--json", cwd=tmp_path).stdout)
    assert (facts["restored_version"], facts["version"]) == (2, 4)
    assert facts["value"]["chapters"][0]["title"] == "Intro"


def test_help_shows_flags_without_values_and_arguments_by_name(tmp_path: Path) -> None:
    helped = plait_env("run", "--help", cwd=tmp_path, COLUMNS="200")
    assert helped.returncode == 0
    assert "<bool>" not in helped.stdout
    assert "<list[str]>" not in helped.stdout
    assert "{graph}" not in helped.stdout
    assert "run [OPTIONS] GRAPH" in helped.stdout
    assert "<bool>" not in plait_env("--help", cwd=tmp_path, COLUMNS="200").stdout


def test_piped_tables_honour_columns_and_never_cut_ids(tmp_path: Path) -> None:
    run_id = paused_video_run(tmp_path)
    note = "the chapter timestamps were off by several seconds at every boundary, as the reviewer noted " * 2
    value = '{"chapters": [{"title": "Intro", "start_sec": 0, "end_sec": 15}]}'
    plait("override", run_id, "chapter_split", "--value", value, "--note", note, cwd=tmp_path)
    ledger = plait_env("runs", "show", run_id, "--ledger", cwd=tmp_path, COLUMNS="140").stdout
    table = ledger[ledger.index("field ledger") :]
    assert max(len(line) for line in table.splitlines()) <= 140  # the reason column wraps at $COLUMNS
    narrow = plait_env("runs", "list", cwd=tmp_path, COLUMNS="50").stdout
    assert run_id in narrow  # widened rather than cut
    assert "graph" in narrow
    assert "status" in narrow


def test_a_usage_error_with_json_prints_a_json_error_on_stdout(tmp_path: Path) -> None:
    missing = plait("runs", "show", "--json", cwd=tmp_path)
    assert missing.returncode == 2
    error: dict[str, Any] = json.loads(missing.stdout)["error"]
    assert error["code"] == "usage"
    assert "RUN_ID" in error["message"]
    assert "--help" in error["hint"]
    unknown = json.loads(plait("runs", "show", "feed", "--json", cwd=tmp_path).stdout)["error"]
    assert unknown["code"] == "not_found"
    assert "no run 'feed'" in unknown["message"]


def test_db_takes_a_plain_file_path_as_sqlite(tmp_path: Path) -> None:
    done = plait("run", *example_args("feedback_triage"), "--db", "runs.db", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs.db").is_file()
    assert len(json.loads(plait("runs", "list", "--db", str(tmp_path / "runs.db"), "--json", cwd=tmp_path).stdout)) == 1


def test_validate_small_things(tmp_path: Path) -> None:
    graph = tmp_path / "g.yaml"
    graph.write_text(
        "plait: 1\nid: g\nnodes:\n  - {id: a, type: LLM_CALL, prompt: 'hi'}\n"
        "  - {id: b, type: LLM_CALL, system: 'be brief', user_prompt_tpl: x}\nedges:\n  - {from: a, to: b}\n"
    )
    checked = plait("validate", str(graph), cwd=tmp_path)
    assert (
        "field 'prompt' is not allowed on LLM_CALL nodes\n    hint: did you mean 'user_prompt_tpl'?" in checked.stderr
    )
    assert "field 'system' is not allowed on LLM_CALL nodes\n    hint: did you mean 'system_prompt'?" in checked.stderr
    assert (
        "unknown field 'edges.0.from'\n    hint: did you mean 'source'? edges are written `source:`" in checked.stderr
    )
    assert "edge edges.0 has no 'target'\n    hint: add `target:`" in checked.stderr
    one = tmp_path / "one.yaml"
    one.write_text("plait: 1\nid: one\nnodes:\n  - {id: a, type: LLM, user_prompt_tpl: x}\n")
    assert "(1 error)" in plait("validate", str(one), cwd=tmp_path).stdout


def test_a_schema_violation_names_its_path_once(tmp_path: Path) -> None:
    run_id = paused_video_run(tmp_path)
    bad = plait("override", run_id, "chapter_split", "--value", '{"chapters": 5}', cwd=tmp_path)
    assert bad.returncode == 2
    assert "chapters: 5 is not of type 'array' (schema 'chapter_list')" in bad.stderr
    assert "chapter_list: chapters:" not in bad.stderr


def test_a_fork_takes_a_display_name_and_derives_its_id(tmp_path: Path) -> None:
    first = plait("graphs", "fork", "plait.video_chapters", "--name", "My fork", "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (json.loads(first.stdout)["slug"], json.loads(first.stdout)["name"]) == ("my_fork", "My fork")
    second = json.loads(
        plait("graphs", "fork", "plait.video_chapters", "--name", "My fork", "--json", cwd=tmp_path).stdout
    )
    assert second["slug"] == "my_fork_2"
    chosen = json.loads(
        plait(
            "graphs", "fork", "plait.video_chapters", "--id", "clips", "--name", "My fork", "--json", cwd=tmp_path
        ).stdout
    )
    assert chosen["slug"] == "clips"

    shown = plait("graphs", "show", "my_fork", cwd=tmp_path).stdout
    assert "version 1 of 1, schema_version 1.0.0, source system_fork, parent plait.video_chapters" in shown
    stored = json.loads(plait("graphs", "show", "my_fork", "--json", cwd=tmp_path).stdout)["stored"]
    assert (stored["version"], stored["source_type"], stored["parent"]["slug"]) == (
        1,
        "system_fork",
        "plait.video_chapters",
    )
