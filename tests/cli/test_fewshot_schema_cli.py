"""Few-shot examples from corrections across schema versions, as an author changes the graph file
and runs it again (`plait run FILE` stores each change as a new version): a correction made under
an older major of the node's schema is left out of the prompt and named in the snapshot; one made
before a minor change stays."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.cli.test_run_cli import plait


def write_graph(folder: Path, *, field: str = "label", labels: tuple[str, ...] = ("bug", "feature")) -> Path:
    """The author's file: one model call that labels feedback, learning from corrections."""
    schema = {
        "type": "object",
        "properties": {field: {"type": "string", "enum": list(labels)}},
        "required": [field],
        "additionalProperties": False,
    }
    graph: dict[str, Any] = {
        "plait": 1,
        "id": "triage",
        "schemas": [{"id": "label", "schema": schema, "breaking_change": field != "label"}],
        "nodes": [
            {
                "id": "classify",
                "type": "LLM_CALL",
                "system_prompt": "Label the feedback.",
                "user_prompt_tpl": "Feedback: {{ input.text }}",
                "use_overrides_as_fewshot": True,
            }
        ],
        "edges": [{"source": "classify", "target": "END", "schema_id": "label"}],
    }
    path = folder / "triage.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False), encoding="utf-8")
    return path


def run_file(folder: Path, text: str, answer: dict[str, str]) -> str:
    """One run of the file as it is now; the id of the run."""
    script = folder / "script.yaml"
    script.write_text(yaml.safe_dump({"responses": [{"node": "classify", "output": answer}]}), encoding="utf-8")
    done = plait(
        "run", str(folder / "triage.yaml"), "-i", f"text={text}", "--llm", f"scripted:{script}", "--json", cwd=folder
    )
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["run_id"])


def classify_run(run_id: str, folder: Path) -> dict[str, Any]:
    done = plait("runs", "show", run_id, "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    return dict(node)


def test_a_correction_under_an_older_major_is_left_out_and_a_minor_change_keeps_it(tmp_path: Path) -> None:
    write_graph(tmp_path)
    first = run_file(tmp_path, "the app crashes on upload", {"label": "feature"})
    corrected = plait("override", first, "classify", "--value", '{"label": "bug"}', "--policy", "KEEP", cwd=tmp_path)
    assert corrected.returncode == 0, corrected.stderr
    corrected_run = classify_run(first, tmp_path)["id"]

    write_graph(tmp_path, labels=("bug", "feature", "question"))  # enum value added: a minor change, 1.1.0
    minor = classify_run(run_file(tmp_path, "it crashes when I save", {"label": "bug"}), tmp_path)["input_snapshot"]
    assert [e["node_run_id"] for e in minor["fewshot"]] == [corrected_run]
    assert "fewshot_left_out" not in minor
    assert "Feedback: the app crashes on upload" in minor["rendered_system_prompt"]

    write_graph(tmp_path, field="kind")  # the field renamed: a new major, 2.0.0
    major = classify_run(run_file(tmp_path, "dark mode please", {"kind": "feature"}), tmp_path)["input_snapshot"]
    assert major["fewshot"] == []
    (left_out,) = major["fewshot_left_out"]
    assert major["fewshot_left_out_count"] == 1
    assert left_out["node_run_id"] == corrected_run
    assert (left_out["schema_id"], left_out["version"]) == ("label", "1.0.0")
    assert "another major version" in left_out["reason"]
    assert "2.0.0" in left_out["reason"]
    assert "the app crashes on upload" not in major["rendered_system_prompt"]
    assert major["rendered_system_prompt"] == "Label the feedback."
