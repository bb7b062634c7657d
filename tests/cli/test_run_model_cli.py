"""A run's model, cache and housekeeping through the real `plait` entry point: later commands
continue on the run's own model, a change of model is recorded and shown, an explicit rerun asks
the model afresh, a refused `plait run` leaves no run behind, `runs cancel` and `runs delete`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_corrections_cli import newest, only_run, shown
from tests.cli.test_run_cli import EXAMPLES, example_args, plait
from tests.worker.counting_server import counting_server, openai_config

TINY = """
plait: 1
id: tiny
schemas:
  - id: short
    version: 1.0.0
    schema: {type: object, properties: {text: {type: string, maxLength: 40}}, required: [text]}
nodes:
  - {id: a, type: LLM_CALL, user_prompt_tpl: "Say hi to {{ input.name }}"}
  - {id: b, type: LLM_CALL, user_prompt_tpl: "Repeat: {{ a.text }}"}
edges:
  - {source: a, target: b, schema_id: short}
  - {source: b, target: END, schema_id: short}
"""


def served_by(node: dict[str, Any]) -> str:
    return str(node["attempts"][-1].get("provider"))


def test_review_and_rerun_continue_on_the_runs_own_model(tmp_path: Path) -> None:
    script = EXAMPLES / "scripted" / "video_chapters.yaml"
    assert plait("run", *example_args("video_chapters"), cwd=tmp_path).returncode == 3
    run_id = only_run(tmp_path)
    assert shown(run_id, tmp_path)["llm"] == {"llm": f"scripted:{script.resolve()}"}
    approved = plait("review", run_id, "review", "--approve", cwd=tmp_path)  # no --llm: the run's own model
    assert approved.returncode == 0, approved.stderr
    assert served_by(newest(shown(run_id, tmp_path))["subtitles"]) == "scripted"
    rerun = plait("rerun", run_id, "subtitles", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    detail = shown(run_id, tmp_path)
    assert (newest(detail)["subtitles"]["activation"], served_by(newest(detail)["subtitles"])) == (2, "scripted")
    assert detail["llm_history"] == []


def test_an_explicit_llm_is_recorded_and_shown(tmp_path: Path) -> None:
    copy = tmp_path / "copy.yaml"
    copy.write_text((EXAMPLES / "scripted" / "feedback_triage.yaml").read_text())
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    run_id = only_run(tmp_path)
    again = plait("rerun", run_id, "classify", "--llm", f"scripted:{copy}", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    detail = shown(run_id, tmp_path)
    assert detail["llm"] == {"llm": f"scripted:{copy.resolve()}"}
    ((change),) = detail["llm_history"]
    assert change["by"] == "rerun"
    assert change["from"]["llm"].endswith("scripted/feedback_triage.yaml")
    table = plait("runs", "show", run_id, cwd=tmp_path).stdout
    assert "model changed" in table
    assert "copy.yaml" in table
    assert plait("run", *example_args("feedback_triage"), cwd=tmp_path).returncode == 0
    runs = json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout)
    other = next(r["id"] for r in runs if r["id"] != run_id)
    diff = plait("runs", "diff", other, run_id, cwd=tmp_path)
    assert "model B" in diff.stdout
    assert "changed by rerun" in diff.stdout
    assert json.loads(plait("runs", "diff", other, run_id, "--json", cwd=tmp_path).stdout)["same_model"] is False


def test_an_explicit_rerun_asks_the_model_afresh(tmp_path: Path) -> None:
    """A node `rerun` names is asked afresh, not answered from the cache, unless `--cache`. The
    model is an OpenAI-compatible server on loopback (cacheable, as the embedded model is) that
    counts the calls it answers for that node."""
    graph = tmp_path / "tiny.yaml"
    graph.write_text(TINY)
    config = tmp_path / "plait.toml"
    with counting_server(latency_s=0, answer=lambda prompt: '{"text": "hi Bo"}') as (url, counts):
        config.write_text(openai_config(url))
        asked = lambda: sum(p.startswith("Say hi") for p in counts.prompts)  # noqa: E731
        assert plait("run", str(graph), "-i", "name=Bo", "--config", str(config), "-q", cwd=tmp_path).returncode == 0
        assert asked() == 1
        run_id = only_run(tmp_path)
        assert plait("rerun", run_id, "a", "-q", cwd=tmp_path).returncode == 0
        assert newest(shown(run_id, tmp_path))["a"]["attempts"][-1].get("cache_hit") is None  # a fresh answer
        assert asked() == 2
        assert plait("rerun", run_id, "a", "--cache", "-q", cwd=tmp_path).returncode == 0
        assert newest(shown(run_id, tmp_path))["a"]["attempts"][-1].get("cache_hit") is True
        assert asked() == 2
        assert plait("resume", run_id, "--no-cache", "-q", cwd=tmp_path).returncode == 0  # the flag is accepted


def test_a_refused_run_leaves_no_run_behind(tmp_path: Path) -> None:
    graph = EXAMPLES / "meeting_times.yaml"
    inputs = EXAMPLES / "inputs" / "meeting_times.yaml"
    refused = plait("run", str(graph), "--input-file", str(inputs), "--llm", "local", cwd=tmp_path)
    assert refused.returncode == 2
    assert "not configured" in refused.stderr
    assert json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout) == []


def test_runs_cancel_and_delete(tmp_path: Path) -> None:
    assert plait("run", *example_args("video_chapters"), cwd=tmp_path).returncode == 3
    paused = only_run(tmp_path)
    cancelled = plait("runs", "cancel", paused, cwd=tmp_path)
    assert cancelled.returncode == 0, cancelled.stderr
    assert shown(paused, tmp_path)["status"] == "cancelled"
    again = plait("runs", "cancel", paused, cwd=tmp_path)
    assert again.returncode == 2
    assert "has ended" in again.stderr
    refused = plait("runs", "delete", paused, cwd=tmp_path)
    assert refused.returncode == 2
    assert "--force" in refused.stderr
    deleted = plait("runs", "delete", paused, "--force", "--json", cwd=tmp_path)
    assert deleted.returncode == 0, deleted.stderr
    assert json.loads(deleted.stdout)["node_runs"] == 4
    assert json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout) == []
    assert plait("runs", "delete", paused, cwd=tmp_path).returncode == 2
