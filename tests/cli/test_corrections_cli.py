"""`plait review | override | rerun | rollback` and `runs show --ledger` as a user runs them:
real processes on a real SQLite file, the README's walkthrough on the seed examples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_run_cli import EXAMPLES, example_args, plait


def only_run(cwd: Path) -> str:
    (run,) = json.loads(plait("runs", "list", "--json", cwd=cwd).stdout)
    return str(run["id"])


def shown(run_id: str, cwd: Path, *extra: str) -> dict[str, Any]:
    done = plait("runs", "show", run_id, "--json", *extra, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def newest(detail: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for n in detail["nodes"]:
        if n["node_id"] not in out or n["activation"] > out[n["node_id"]]["activation"]:
            out[n["node_id"]] = n
    return out


def test_correcting_a_video_chapters_run(tmp_path: Path) -> None:
    script = f"scripted:{EXAMPLES / 'scripted' / 'video_chapters.yaml'}"
    assert plait("run", *example_args("video_chapters"), cwd=tmp_path).returncode == 3  # paused for the review
    run_id = only_run(tmp_path)

    bad = plait("review", run_id, "review", "--value", '{"chapters": "none"}', cwd=tmp_path)
    assert bad.returncode == 2
    assert "out-edge schemas" in bad.stderr
    approved = plait("review", run_id, "review", "--approve", "--llm", script, cwd=tmp_path)
    assert approved.returncode == 0, approved.stderr
    assert "subtitles" in json.loads(approved.stdout)

    chapters = tmp_path / "chapters.json"
    chapters.write_text(json.dumps({"chapters": [{"title": "Intro", "start_sec": 0, "end_sec": 15}]}))
    corrected = plait(
        "override", run_id, "chapter_split", "--file", str(chapters), "--note", "timestamps", cwd=tmp_path
    )
    assert corrected.returncode == 0, corrected.stderr
    assert "stale now: clip_points, review" in corrected.stderr
    nodes = newest(shown(run_id, tmp_path))
    assert nodes["chapter_split"]["status"] == "overridden"
    assert nodes["chapter_split"]["output"]["chapters"][0]["title"] == "Introduction"  # the model's original
    assert nodes["chapter_split"]["effective_output"]["chapters"][0]["title"] == "Intro"
    assert (nodes["clip_points"]["status"], nodes["review"]["status"]) == ("stale", "stale")
    table = plait("runs", "show", run_id, cwd=tmp_path)
    assert "stale" in table.stdout
    assert f"plait rerun {run_id}" in table.stdout

    rerun = plait("rerun", run_id, "clip_points", "--llm", script, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    nodes = newest(shown(run_id, tmp_path))
    assert (nodes["clip_points"]["activation"], nodes["clip_points"]["status"]) == (2, "completed")
    assert "Intro" in nodes["clip_points"]["input_snapshot"]["rendered_user_prompt"]  # it read the correction

    paused = plait("rerun", run_id, "review", "--llm", script, cwd=tmp_path)
    assert paused.returncode == 3  # the review asks the person again
    assert plait("review", run_id, "review", "--approve", "--llm", script, cwd=tmp_path).returncode == 0


def test_freezing_refusal_and_rollback_on_the_case7_example(tmp_path: Path) -> None:
    assert plait("run", *example_args("meeting_action_items"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    ledger = shown(run_id, tmp_path, "--ledger")["ledger"]
    extract = [v for v in ledger if v["owner"] == "extract_entities"]
    assert [v["kind"] for v in extract] == ["execute", "freeze"]
    assert extract[1]["frozen"]["entities"]["by"] == "normalize_entities"
    assert [r["node_id"] for r in extract[0]["consumed_by"]] == ["normalize_entities"]
    assert next(v["frozen"] for v in ledger if v["owner"] == "input")["*"]["policy"] == "on_create"

    before = shown(run_id, tmp_path, "--ledger")
    refused = plait(
        "override", run_id, "extract_entities", "--value", '{"entities": [{"name": "Cy", "kind": "person"}]}',
        cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2
    assert "extract_entities.entities is frozen" in refused.stderr
    assert "plait rollback" in refused.stderr
    assert shown(run_id, tmp_path, "--ledger") == before  # nothing changed

    rolled = plait("rollback", run_id, "extract_entities.entities", "--to-version", "1", cwd=tmp_path)
    assert rolled.returncode == 0, rolled.stderr
    last = [v for v in shown(run_id, tmp_path, "--ledger")["ledger"] if v["owner"] == "extract_entities"][-1]
    assert (last["kind"], last["frozen"]) == ("rollback", {})
    again = plait(
        "override", run_id, "extract_entities", "--value", '{"entities": [{"name": "Cy", "kind": "person"}]}',
        cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "stale now: normalize_entities" in again.stderr

    missing = plait("rollback", run_id, "extract_entities", "--to-version", "99", cwd=tmp_path)
    assert missing.returncode == 2
    assert "has no version 99" in missing.stderr


def test_bad_corrections_exit_2_and_change_nothing(tmp_path: Path) -> None:
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    before = shown(run_id, tmp_path, "--ledger")
    cases = [
        (["override", run_id, "classify", "--value", "{not json"], "not valid JSON"),
        (["override", "no-such-run", "classify", "--value", "{}"], "no run 'no-such-run'"),
        (["override", run_id, "nope", "--value", "{}"], "has no node 'nope'"),
        (["override", run_id, "thank", "--value", "{}"], "is skipped: there is no output to override"),
        (["override", run_id, "classify", "--value", "{}", "--policy", "SOMETIMES"], "unknown policy"),
        (["review", run_id, "classify", "--approve"], "not a HUMAN_REVIEW"),
        (["rollback", run_id, "classify", "--to-version", "7"], "has no version 7"),
    ]
    for args, message in cases:
        done = plait(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)
    assert shown(run_id, tmp_path, "--ledger") == before


FAILING = """
plait: 1
id: failing_extract
input_schema: {type: object, properties: {text: {type: string}}, required: [text]}
schemas:
  - id: label
    version: 1.0.0
    schema: {type: object, properties: {label: {type: string}}, required: [label], additionalProperties: false}
nodes:
  - {id: extract, type: LLM_CALL, user_prompt_tpl: "Label {{ input.text }}", max_retries: 0}
  - {id: shout, type: TRANSFORM, transform_expr: "({label: current.label.toUpperCase()})"}
edges:
  - {source: extract, target: shout, schema_id: label}
  - {source: shout, target: END, schema_id: label}
"""


def test_a_person_supplies_the_output_a_model_could_not_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "graph.yaml").write_text(FAILING)
    (tmp_path / "model.yaml").write_text("responses:\n  - text: not JSON at all\n")
    failed = plait("run", "graph.yaml", "-i", "text=crash on upload", "--llm", "scripted:model.yaml", cwd=tmp_path)
    assert failed.returncode == 1, failed.stderr
    run_id = only_run(tmp_path)
    assert f"`plait override {run_id} extract --file F` corrects it" in failed.stderr  # the hint it follows

    wrong = plait("override", run_id, "extract", "--value", '{"label": 5}', cwd=tmp_path)
    assert wrong.returncode == 2  # checked against the out-edge schema like any override
    assert newest(shown(run_id, tmp_path))["extract"]["status"] == "failed"

    (tmp_path / "fix.json").write_text('{"label": "bug"}')
    fixed = plait("override", run_id, "extract", "--file", "fix.json", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert "the run continues from the new value" in fixed.stderr
    assert f"run {run_id} completed" in fixed.stderr
    detail = shown(run_id, tmp_path)
    nodes = newest(detail)
    assert (detail["status"], detail["output"]) == ("completed", {"label": "BUG"})
    assert nodes["extract"]["status"] == "overridden"
    assert nodes["extract"]["effective_output"]["label"] == "bug"
    assert nodes["extract"]["error"]["kind"] == "schema"  # what went wrong stays on record
    assert nodes["shout"]["status"] == "completed"
    table = plait("runs", "show", run_id, cwd=tmp_path).stdout
    assert '{"label": "bug"}' in table  # the value a person gave, not the old error


def test_a_correction_made_while_a_review_waits_reaches_the_review(tmp_path: Path) -> None:
    script = f"scripted:{EXAMPLES / 'scripted' / 'video_chapters.yaml'}"
    assert plait("run", *example_args("video_chapters"), cwd=tmp_path).returncode == 3  # paused for the review
    run_id = only_run(tmp_path)
    (tmp_path / "chapters.json").write_text('{"chapters": [{"title": "Only", "start_sec": 0, "end_sec": 15}]}')
    corrected = plait("override", run_id, "chapter_split", "--file", "chapters.json", "--llm", script, cwd=tmp_path)
    assert corrected.returncode == 3, corrected.stderr  # the review is opened again, on the corrected value
    assert '"title": "Only"' in corrected.stderr  # what the person is now asked to approve
    reviews = [n for n in shown(run_id, tmp_path)["nodes"] if n["node_id"] == "review"]
    assert [(n["activation"], n["status"]) for n in reviews] == [(1, "stale"), (2, "pending")]

    back = plait("rollback", run_id, "chapter_split", "--to-version", "1", cwd=tmp_path)  # on the run's own model
    assert back.returncode == 3, back.stderr  # again: the review shows the value rolled back to
    approved = plait("review", run_id, "review", "--approve", "--llm", script, cwd=tmp_path)
    assert approved.returncode == 0, approved.stderr
    detail = shown(run_id, tmp_path)
    nodes = newest(detail)
    assert detail["status"] == "completed"
    assert nodes["review"]["activation"] == 3
    assert nodes["review"]["effective_output"]["chapters"][0]["title"] == "Introduction"  # version 1's
    assert nodes["review"]["effective_output"]["chapters"] == nodes["chapter_split"]["effective_output"]["chapters"]
