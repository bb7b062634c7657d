"""`plait templates`: the system templates listed read-only, a user copy made and edited, a
preview printing the console on stderr and the prompt on stdout, against an input or against a
run's node, and a failing script's layered error. Real `plait` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from tests.plait_cli import run_plait, start_plait

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLAIT_DB": f"sqlite:///{cwd / 'plait.db'}"}
    return run_plait(*args, cwd=cwd, env=env, timeout=60)


def test_system_templates_are_listed_read_only_and_copied_into_your_own(tmp_path: Path) -> None:
    listed = json.loads(plait("templates", "list", "--json", cwd=tmp_path).stdout)
    system = {t["id"]: t for t in listed}
    assert system["plait.summary"]["source_type"] == "system"
    refused = plait("templates", "update", "plait.summary", "--name", "mine", cwd=tmp_path)
    assert refused.returncode == 2
    assert "read-only" in refused.stderr
    assert "plait templates create ID --from plait.summary" in refused.stderr
    made = plait("templates", "create", "my_summary", "--from", "plait.summary", "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["based_on_template_id"] == "plait.summary"
    (tmp_path / "v2.js").write_text('async function main() {\n  return "v2: " + await getVar("input.text");\n}\n')
    assert plait("templates", "update", "my_summary", "--file", "v2.js", cwd=tmp_path).returncode == 0
    shown = plait("templates", "show", "my_summary", cwd=tmp_path)
    assert shown.stdout.startswith('async function main() {\n  return "v2: "')


def test_a_preview_prints_the_console_then_the_prompt(tmp_path: Path) -> None:
    (tmp_path / "in.json").write_text(json.dumps({"text": "Birds fly south in winter."}))
    done = plait("templates", "preview", "plait.summary", "--input-file", "in.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[info] summarising 5 words" in done.stderr
    assert done.stdout.startswith("Summarise the text below in two sentences.")
    assert "Birds fly south in winter." in done.stdout


def test_a_failing_script_says_what_and_where_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "bad.js").write_text('async function main() {\n  console.warn("careful");\n  return nothing;\n}\n')
    failed = plait("templates", "preview", "--file", "bad.js", cwd=tmp_path)
    assert failed.returncode == 1
    assert "[warn] careful" in failed.stderr
    assert "the script failed (thrown): ReferenceError: nothing is not defined (line 3, column 10)" in failed.stderr
    (tmp_path / "broken.js").write_text("async function main( {\n")
    refused = plait("templates", "create", "broken", "--file", "broken.js", cwd=tmp_path)
    assert refused.returncode == 2
    assert "the script in --file does not parse" in refused.stderr


def test_a_preview_against_a_runs_node_sees_what_that_node_sees(tmp_path: Path) -> None:
    ran = plait(
        "run",
        str(EXAMPLES / "feedback_triage.yaml"),
        "--input-file",
        str(EXAMPLES / "inputs" / "feedback_triage.yaml"),
        "--llm",
        f"scripted:{EXAMPLES / 'scripted' / 'feedback_triage.yaml'}",
        "--quiet",
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    run_id = json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout)[0]["id"]
    (tmp_path / "see.js").write_text(
        'async function main() { return "label: " + await getVar("classify.label") + "\\n" + '
        'await getSchemaHint("label") }\n'
    )
    seen = plait("templates", "preview", "--file", "see.js", "--run", run_id, "--node", "route", cwd=tmp_path)
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.startswith("label: ")
    assert "label (version" in seen.stdout


def test_validate_warns_about_a_named_template_neither_shipped_nor_stored(tmp_path: Path) -> None:
    graph = tmp_path / "g.yaml"
    graph.write_text(
        "plait: 1\nid: g\nnodes:\n"
        "  - {id: a, type: LLM_CALL, prompt_script: plait.summary}\n"
        "  - {id: b, type: LLM_CALL, prompt_script: my_title}\n"
        "edges:\n  - {source: a, target: b}\n"
    )
    missing = plait("validate", str(graph), "--json", cwd=tmp_path)
    assert missing.returncode == 0  # valid: the template may be stored where the graph runs
    warnings = json.loads(missing.stdout)["warnings"]
    assert [(w["code"], w["node_id"]) for w in warnings] == [("unknown_template", "b")]  # the system one is known
    (tmp_path / "t.js").write_text('async function main() { return "t" }\n')
    assert plait("templates", "create", "my_title", "--file", "t.js", cwd=tmp_path).returncode == 0
    stored = plait("validate", str(graph), "--json", cwd=tmp_path)
    assert json.loads(stored.stdout)["warnings"] == []


SLOW_WORDS = 600
"""The slow answer's words, `delay_ms` spread between them: the first arrives after half a
second, the last ("end") after five minutes, longer than any step of a test on a busy host."""
SLOW_TEXT = "one " + "more " * (SLOW_WORDS - 2) + "end"
STREAMS = f"""
responses:
  - {{match: BREAK, text: "the answer that breaks off here", stream_break_after: 14}}
  - {{match: SLOW, text: "{SLOW_TEXT}", delay_ms: {SLOW_WORDS * 500}}}
  - {{match: JSON, output: {{title: Birds}}}}
  - {{text: "Birds fly south in winter."}}
"""
ASKS = """async function main() {
  const t = await getVar("input.topic");
  console.warn("topic", t);
  return `ask ${t}`;
}
"""


def generation(tmp_path: Path, topic: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "streams.yaml").write_text(STREAMS)
    (tmp_path / "ask.js").write_text(ASKS)
    (tmp_path / "in.json").write_text(json.dumps({"topic": topic}))
    return plait("templates", "run", "--file", "ask.js", "--input-file", "in.json", "--llm", "scripted:streams.yaml",
                 *extra, cwd=tmp_path)  # fmt: skip


def test_run_streams_the_answer_on_stdout_and_the_console_on_stderr(tmp_path: Path) -> None:
    done = generation(tmp_path, "birds")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Birds fly south in winter.\n"
    assert "[warn] topic birds" in done.stderr
    parsed = generation(tmp_path, "JSON", "--schema-target", "title", "--json")
    assert json.loads(parsed.stdout)["value"] == {"title": "Birds"}


def test_run_names_the_step_that_failed_and_keeps_a_partial_answer(tmp_path: Path) -> None:
    broken = generation(tmp_path, "BREAK")
    assert broken.returncode == 1
    assert broken.stdout == "the answer tha\n"
    assert "the stream step failed (stream)" in broken.stderr
    assert "partial" in broken.stderr
    (tmp_path / "bad.js").write_text("async function main() {\n  return 1 +;\n}\n")
    syntax = plait("templates", "run", "--file", "bad.js", "--llm", "scripted:streams.yaml", cwd=tmp_path)
    assert syntax.returncode == 1
    assert "the script step failed (syntax) at line 2, column" in syntax.stderr
    unparsed = generation(tmp_path, "birds", "--schema-target", "title")
    assert unparsed.returncode == 1
    assert "the parse step failed (not_json)" in unparsed.stderr


def test_ctrl_c_stops_the_model_call_and_keeps_what_arrived(tmp_path: Path) -> None:
    (tmp_path / "streams.yaml").write_text(STREAMS)
    (tmp_path / "ask.js").write_text(ASKS)
    (tmp_path / "in.json").write_text(json.dumps({"topic": "SLOW"}))
    env = {**os.environ, "PLAIT_DB": f"sqlite:///{tmp_path / 'plait.db'}", "PYTHONUNBUFFERED": "1"}
    process = start_plait(
        "templates",
        "run",
        "--file",
        "ask.js",
        "--input-file",
        "in.json",
        "--llm",
        "scripted:streams.yaml",
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    try:
        first = process.stdout.read(4)  # "one " arrives after half a second, "end" five minutes later
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)  # a call not stopped would still be streaming: a timeout
    finally:
        if process.poll() is None:
            process.kill()
    assert first == "one "
    assert process.returncode == 130
    assert "cancelled" in err
    assert "end" not in out
