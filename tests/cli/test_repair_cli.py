"""The repair hook on failures no prompt change helps, as a user meets them: real processes on a
real SQLite file, the repair model served by the scripted provider. A CODE node that throws is
diagnosed: `escalate` pauses the run at it until a person gives its output with `plait override`,
`giveup` fails it with the explanation; an LLM_CALL whose provider keeps failing is diagnosed too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.cli.test_run_cli import plait

COUNT = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}


def write(folder: Path, name: str, content: dict[str, Any]) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    return path


def counting_graph(folder: Path) -> Path:
    """A CODE node that throws on an input without text, then a TRANSFORM reading its count."""
    code = "if (!input.text) throw new Error('the input has no text');\nreturn {count: input.text.split(' ').length};"
    return write(
        folder,
        "count.yaml",
        {
            "plait": 1,
            "id": "count",
            "schemas": [{"id": "count", "schema": COUNT}],
            "nodes": [
                {"id": "count_words", "type": "CODE", "code": code, "repair": True},
                {"id": "report", "type": "TRANSFORM", "transform_expr": "({words: nodes.count_words.count})"},
            ],
            "edges": [
                {"source": "count_words", "target": "report", "schema_id": "count"},
                {"source": "report", "target": "END"},
            ],
        },
    )


def diagnosis(folder: Path, node: str, action: str, explanation: str, *rules: dict[str, Any]) -> str:
    """A script whose repair model answers `action` about `node` (its question holds `error`)."""
    answer = {"action": action, "explanation": explanation, "confidence": 0.9}
    script = write(folder, "script.yaml", {"responses": [{"node": node, "match": '"error"', "output": answer}, *rules]})
    return f"scripted:{script}"


def shown(run_id: str, folder: Path) -> dict[str, Any]:
    done = plait("runs", "show", run_id, "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def node(detail: dict[str, Any], node_id: str) -> dict[str, Any]:
    (found,) = [n for n in detail["nodes"] if n["node_id"] == node_id]
    return dict(found)


def test_a_throwing_code_node_escalated_by_the_repair_model_waits_for_a_persons_override(tmp_path: Path) -> None:
    graph = counting_graph(tmp_path)
    llm = diagnosis(tmp_path, "count_words", "escalate", "the record holds no text; a person must count")
    paused = plait("run", str(graph), "-i", "other=x", "--llm", llm, "--json", cwd=tmp_path)
    assert paused.returncode == 3, paused.stderr  # paused at the node, waiting for a person
    run_id = json.loads(paused.stdout)["run_id"]
    detail = shown(run_id, tmp_path)
    assert detail["status"] == "paused"
    counted = node(detail, "count_words")
    assert counted["status"] == "pending"
    repair = counted["input_snapshot"]["repair"]
    assert (repair["action"], repair["explanation"]) == ("escalate", "the record holds no text; a person must count")
    assert repair["first_error"]["kind"] == "code"
    assert "the input has no text" in repair["first_error"]["message"]
    assert [bool(a.get("repair")) for a in counted["attempts"]] == [False, True]
    (waiting,) = detail["waiting"]
    assert waiting["commands"] == [f"plait review {run_id} count_words --file F"]  # nothing to approve
    table = plait("runs", "show", run_id, cwd=tmp_path)
    assert "escalated by the repair hook: the record holds no text" in table.stdout

    output = tmp_path / "count.json"
    output.write_text(json.dumps({"count": 3}), encoding="utf-8")
    given = plait("override", run_id, "count_words", "--file", str(output), cwd=tmp_path)
    assert given.returncode == 0, given.stderr
    assert f"run {run_id} completed" in given.stderr
    detail = shown(run_id, tmp_path)
    assert (detail["status"], detail["output"]) == ("completed", {"words": 3})
    assert node(detail, "count_words")["status"] == "overridden"


def test_a_throwing_code_node_the_repair_model_gives_up_on_fails_with_its_explanation(tmp_path: Path) -> None:
    graph = counting_graph(tmp_path)
    llm = diagnosis(tmp_path, "count_words", "giveup", "the code cannot count without text")
    failed = plait("run", str(graph), "-i", "other=x", "--llm", llm, "--json", cwd=tmp_path)
    assert failed.returncode == 1, failed.stderr
    counted = node(shown(json.loads(failed.stdout)["run_id"], tmp_path), "count_words")
    assert counted["status"] == "failed"
    assert counted["error"]["kind"] == "code"
    assert "the input has no text" in counted["error"]["message"]
    assert counted["error"]["message"].endswith("(repair: giveup: the code cannot count without text)")
    assert counted["input_snapshot"]["repair"]["action"] == "giveup"


def test_a_provider_fault_after_the_retries_goes_to_the_repair_model(tmp_path: Path) -> None:
    graph = write(
        tmp_path,
        "title.yaml",
        {
            "plait": 1,
            "id": "title",
            "schemas": [{"id": "title", "schema": {"type": "object", "properties": {"title": {"type": "string"}}}}],
            "nodes": [
                {
                    "id": "write",
                    "type": "LLM_CALL",
                    "user_prompt_tpl": "A title about {{ input.topic }}",
                    "max_retries": 1,
                    "repair": True,
                }
            ],
            "edges": [{"source": "write", "target": "END", "schema_id": "title"}],
        },
    )
    explanation = "the provider answers 500 to every call; check its status before running again"
    llm = diagnosis(tmp_path, "write", "giveup", explanation, {"node": "write", "error": 500})
    failed = plait("run", str(graph), "-i", "topic=birds", "--llm", llm, "--json", cwd=tmp_path)
    assert failed.returncode == 1, failed.stderr
    written = node(shown(json.loads(failed.stdout)["run_id"], tmp_path), "write")
    assert written["status"] == "failed"
    assert written["error"]["kind"] == "http_500"  # the provider's fault, explained
    assert written["error"]["message"].endswith(f"(repair: giveup: {explanation})")
    assert [a.get("kind") for a in written["attempts"]] == ["http_500", "http_500", None]
    assert written["attempts"][-1]["repair"] is True
