"""`plait batch` as a person uses it (real `plait` processes): results and failures files, the
summary and exit codes; killed with SIGKILL in the middle and resumed, every record is finished
exactly once and no record gets a second run; and the data-cleaning story: a person fixes a
few records, and the fixes become few-shot examples for the rest of the batch."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from plait.store import Store
from tests.plait_cli import run_plait, start_plait

GRAPH = {
    "id": "clean_records",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "schemas": [{"id": "clean", "schema": {"type": "object", "properties": {"text": {"type": "string"}},
                                           "required": ["text"]}}],
    "nodes": [{"id": "clean", "type": "LLM_CALL", "user_prompt_tpl": "Clean this record: {{ input.text }}",
               "use_overrides_as_fewshot": True, "fewshot_max_count": 2}],
    "edges": [{"source": "clean", "target": "END", "schema_id": "clean"}],
}  # fmt: skip


def setup(tmp_path: Path, records: list[str], *, delay_ms: int = 0) -> None:
    (tmp_path / "clean.yaml").write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    rule = {"output": {"text": "cleaned"}, "delay_ms": delay_ms}
    (tmp_path / "model.yaml").write_text(yaml.safe_dump({"responses": [rule]}))
    (tmp_path / "in.jsonl").write_text("".join(line + "\n" for line in records))


def env_of(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PLAIT_DB": f"sqlite:///{tmp_path / 'plait.db'}"}


def plait(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=tmp_path, env=env_of(tmp_path), timeout=120)


def batch(tmp_path: Path, *extra: str, inputs: str = "in.jsonl", output: str = "out.jsonl") -> list[str]:
    return ["batch", "clean.yaml", "--input-file", inputs, "--output", output, "--llm", "scripted:model.yaml", *extra]


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_batch_writes_results_and_failures_and_says_how_it_went(tmp_path: Path) -> None:
    setup(tmp_path, [json.dumps({"text": "a"}), "oops", json.dumps({"text": "b"})])
    done = plait(tmp_path, *batch(tmp_path), "--json")
    assert done.returncode == 1, done.stderr  # one record failed
    summary = json.loads(done.stdout)
    assert (summary["total"], summary["completed"], summary["failed"]) == (3, 2, 1)
    assert [d["index"] for d in lines_of(tmp_path / "out.jsonl")] == [0, 2]
    failed = lines_of(tmp_path / "out.failed.jsonl")
    assert failed[0]["line"] == 2
    assert "not JSON" in failed[0]["reason"]
    again = plait(tmp_path, *batch(tmp_path))
    assert again.returncode == 2
    assert "--resume" in again.stderr  # the output exists: never overwritten silently
    resumed = plait(tmp_path, *batch(tmp_path), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "0 completed, 0 failed, 3 finished before (resumed)" in resumed.stderr


def test_a_killed_batch_resumed_finishes_every_record_exactly_once(tmp_path: Path) -> None:
    count = 60
    setup(tmp_path, [json.dumps({"text": f"r{i}"}) for i in range(count)], delay_ms=150)
    process = start_plait(*batch(tmp_path), "-c", "8", "--quiet", cwd=tmp_path, env=env_of(tmp_path))
    output = tmp_path / "out.jsonl"
    deadline = time.monotonic() + 60
    while len(lines_of(output)) < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # no clean-up: runs in flight stay half done
    process.wait(timeout=10)
    before = len(lines_of(output))
    assert 12 <= before < count
    resumed = plait(tmp_path, *batch(tmp_path), "--resume", "-c", "8")
    assert resumed.returncode == 0, resumed.stderr
    indices = sorted(d["index"] for d in lines_of(output))
    assert indices == list(range(count))  # every record once
    with sqlite3.connect(tmp_path / "plait.db") as db:
        runs = db.execute("select count(*) from prompt_graph_run").fetchone()[0]
        per_record = db.execute("select count(distinct run_id), count(*) from batch_record").fetchone()
    assert runs == count  # no record got a second run
    assert per_record == (count, count)


def test_fixes_to_a_few_records_become_few_shot_examples_for_the_rest(tmp_path: Path) -> None:
    setup(tmp_path, [json.dumps({"text": f"  messy record {i}  "}) for i in range(3)])
    first = plait(tmp_path, *batch(tmp_path, output="first.jsonl"))
    assert first.returncode == 0, first.stderr
    runs = {d["index"]: d["run_id"] for d in lines_of(tmp_path / "first.jsonl")}
    for index in (0, 1):  # a person fixes two of them
        fixed = json.dumps({"text": f"Messy record {index}."})
        done = plait(tmp_path, "override", runs[index], "clean", "--value", fixed, "--policy", "KEEP")
        assert done.returncode == 0, done.stderr
    (tmp_path / "rest.jsonl").write_text("".join(json.dumps({"text": f" record {i} "}) + "\n" for i in range(3, 6)))
    rest = plait(tmp_path, *batch(tmp_path, inputs="rest.jsonl", output="rest_out.jsonl"))
    assert rest.returncode == 0, rest.stderr
    with Store(f"sqlite:///{tmp_path / 'plait.db'}") as store:
        for done in lines_of(tmp_path / "rest_out.jsonl"):
            (node,) = [n for n in store.runs.node_runs(done["run_id"]) if n.node_id == "clean"]
            examples = node.input_snapshot["fewshot"]
            assert sorted(e["output"]["text"] for e in examples) == ["Messy record 0.", "Messy record 1."]
            assert "Messy record 0." in node.input_snapshot["rendered_system_prompt"]  # what the model was shown


def test_a_record_that_is_not_utf8_is_refused_naming_its_line_and_never_sent(tmp_path: Path) -> None:
    """As `plait run --input-file` refuses a file that is not UTF-8, `plait batch` refuses such a
    record (it used to replace the byte with U+FFFD and send the text to the model)."""
    setup(tmp_path, [])
    (tmp_path / "model.yaml").write_text(yaml.safe_dump({"responses": [{"output": {"text": "cleaned"}}],
                                                         "log": "calls.jsonl"}))  # fmt: skip
    (tmp_path / "in.jsonl").write_bytes(b'{"text": "a"}\n{"text": "caf\xe9"}\r\n{"text": "b"}\r\n')
    done = plait(tmp_path, *batch(tmp_path), "--json")
    assert done.returncode == 1, done.stderr
    assert [(f["line"], f["reason"]) for f in lines_of(tmp_path / "out.failed.jsonl")] == [
        (2, "not UTF-8 text (byte 0xe9 at offset 13)")
    ]
    assert sorted(d["index"] for d in lines_of(tmp_path / "out.jsonl")) == [0, 2]
    sent = (tmp_path / "calls.jsonl").read_text()
    assert "\ufffd" not in sent  # the model never saw it
    assert "caf" not in sent
