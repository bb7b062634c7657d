"""What a prompt shows, through `plait validate` and `plait run` (real processes): the names the
design documents write (`<node_id>.output.<field>`, `currentInput`, `nodeOutputs`,
`currentNodeId`), values as lines rather than JSON, and optional fields that print as nothing
instead of blocking the call."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.plait_cli import run_plait

LABELLED = {
    "id": "labelled",
    "version": "1.0.0",
    "schema": {
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "detail": {"type": "object", "properties": {"score": {"type": "integer"}}},
        },
        "required": ["label"],
    },
}
WRAPPED = {
    "id": "wrapped",
    "version": "1.0.0",
    "schema": {"type": "object", "properties": {"output": {"type": "string"}}, "required": ["output"]},
}


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, timeout=120)


def write(tmp_path: Path, name: str, data: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def no_model(tmp_path: Path) -> str:
    """A scripted provider for dry runs, which call no model."""
    return f"scripted:{write(tmp_path, 'answers', {'responses': [{'output': {'label': 'x'}}]})}"


def dry_run(tmp_path: Path, graph: dict[str, Any], upstream: dict[str, Any], *args: str) -> dict[str, Any]:
    """`plait run --dry-run --json` of `graph` with `upstream`'s outputs: its report, after checking the exit code."""
    done = plait(
        "run", write(tmp_path, graph["id"], graph), "--upstream", write(tmp_path, "upstream", upstream),
        "--llm", no_model(tmp_path), "--dry-run", "--json", *args, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stderr
    return dict(json.loads(done.stdout))


def user_prompt(report: dict[str, Any], node_id: str) -> str:
    node = next(n for n in report["nodes"] if n["node_id"] == node_id)
    return str(node["messages"][-1]["content"])


# -- the design documents' names -----------------------------------------------------------------------------

DIALECT = {
    "id": "dialect",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    "schemas": [LABELLED, WRAPPED],
    "nodes": [
        {"id": "classify", "type": "LLM_CALL", "user_prompt_tpl": "Classify {{ currentInput.text }}"},
        {"id": "wrap", "type": "LLM_CALL", "user_prompt_tpl": "Wrap {{ input.text }}"},
        {
            "id": "reply",
            "type": "LLM_CALL",
            "user_prompt_tpl": (
                "A={{ classify.output.label }} B=%classify.output.label% C={{ currentInput.classify.label }} "
                "D={{ nodeOutputs.classify.label }} E={{ nodeOutputs['classify']['label'] }} F={{ currentNodeId }} "
                "G={{ wrap.output }} H={{ classify.output | tojson }}"
            ),
        },
    ],
    "edges": [
        {"source": "classify", "target": "reply", "schema_id": "labelled"},
        {"source": "wrap", "target": "reply", "schema_id": "wrapped"},
    ],
}


def test_the_design_documents_names_validate_and_render_as_plaits_own(tmp_path: Path) -> None:
    checked = plait("validate", write(tmp_path, "dialect", DIALECT), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    upstream = {"classify": {"label": "bug"}, "wrap": {"output": "wrapped text"}}
    report = dry_run(tmp_path, DIALECT, upstream, "-i", "text=The app crashes")
    assert report["problems"] == []
    assert user_prompt(report, "classify") == "Classify The app crashes"  # an entry node's currentInput: the input
    # `<id>.output` is the whole output, unless the output has a field `output` (wrap's schema declares one)
    assert user_prompt(report, "reply") == 'A=bug B=bug C=bug D=bug E=bug F=reply G=wrapped text H={"label": "bug"}'


def test_a_spelling_that_names_nothing_is_refused_with_plaits_spelling(tmp_path: Path) -> None:
    graph = {
        "id": "misnamed",
        "nodes": [
            {"id": "classify", "type": "LLM_CALL", "user_prompt_tpl": "Classify"},
            {"id": "reply", "type": "LLM_CALL", "user_prompt_tpl": "{{ node.output.label }}"},
            {"id": "who", "type": "LLM_CALL", "user_prompt_tpl": "{{ currentNodeId.name }}"},
            {"id": "all", "type": "LLM_CALL", "user_prompt_tpl": "{{ nodeOutputs }}"},
        ],
        "edges": [{"source": "classify", "target": t} for t in ("reply", "who", "all")],
    }
    checked = plait("validate", write(tmp_path, "misnamed", graph), "--json", cwd=tmp_path)
    assert checked.returncode != 0
    errors = {e["node_id"]: e for e in json.loads(checked.stdout)["errors"]}
    assert sorted(errors) == ["all", "reply", "who"]
    assert all(e["code"] == "bad_template_path" for e in errors.values())
    assert "unknown name 'node'" in errors["reply"]["message"]
    assert "must be the id of an upstream node (classify)" in errors["reply"]["hint"]
    assert "<node_id>.<field>" in errors["reply"]["hint"]
    assert "current.<field>" in errors["reply"]["hint"]
    assert "'currentNodeId' is the id of this node, a text: it has no field 'name'" in errors["who"]["message"]
    assert "current.<field>" in errors["who"]["hint"]
    assert "nodeOutputs is Plait's nodes: write nodes.<node_id>.<field>" in errors["all"]["hint"]


# -- values as lines -----------------------------------------------------------------------------------------


def test_lists_and_objects_render_as_lines_and_tojson_gives_json(tmp_path: Path) -> None:
    graph = {
        "id": "lines",
        "schemas": [LABELLED],
        "nodes": [
            {"id": "classify", "type": "LLM_CALL", "user_prompt_tpl": "Classify"},
            {
                "id": "reply",
                "type": "LLM_CALL",
                "user_prompt_tpl": "Tags:\n{{ classify.tags }}\n--\n{{ classify }}\n--\n{{ classify.tags | tojson }}",
            },
        ],
        "edges": [
            {"source": "classify", "target": "reply", "schema_id": "labelled"},
            {"source": "reply", "target": "END"},
        ],
    }
    answers = {
        "responses": [
            {"node": "classify", "output": {"label": "bug", "tags": ["crash", "upload"], "detail": {"score": 3}}},
            {"node": "reply", "output": "ok"},
        ]
    }
    ran = plait(
        "run", write(tmp_path, "lines", graph), "--llm", f"scripted:{write(tmp_path, 'answers', answers)}", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    (run,) = json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout)
    shown = json.loads(plait("runs", "show", run["id"], "--json", cwd=tmp_path).stdout)
    reply = next(n for n in shown["nodes"] if n["node_id"] == "reply")
    # a list one item per line; an object `key: value` lines (what is nested: one line of JSON),
    # of its data only (not the `_schema_id` its stored output carries); `| tojson`: JSON
    assert reply["input_snapshot"]["rendered_user_prompt"] == (
        'Tags:\ncrash\nupload\n--\nlabel: bug\ntags: ["crash", "upload"]\ndetail: {"score": 3}\n--\n["crash", "upload"]'
    )


# -- optional fields -----------------------------------------------------------------------------------------


def test_a_missing_optional_input_field_prints_nothing_and_the_call_goes_out(tmp_path: Path) -> None:
    graph = {
        "id": "noted",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "note": {"type": "string"}},
            "required": ["text"],
        },
        "nodes": [{"id": "reply", "type": "LLM_CALL", "user_prompt_tpl": "Reply to {{ input.text }}.{{ input.note }}"}],
        "edges": [{"source": "reply", "target": "END"}],
    }
    answers = write(tmp_path, "answers", {"responses": [{"node": "reply", "output": "ok"}]})
    ran = plait("run", write(tmp_path, "noted", graph), "-i", "text=hi", "--llm", f"scripted:{answers}", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (run,) = json.loads(plait("runs", "list", "--json", cwd=tmp_path).stdout)
    shown = json.loads(plait("runs", "show", run["id"], "--json", cwd=tmp_path).stdout)
    (reply,) = shown["nodes"]
    assert reply["status"] == "completed"
    assert reply["input_snapshot"]["rendered_user_prompt"] == "Reply to hi."
    assert reply["input_snapshot"]["precheck"]["passed"] is True


def test_only_a_missing_required_field_blocks_the_call(tmp_path: Path) -> None:
    graph = {
        "id": "partial",
        "schemas": [LABELLED],
        "nodes": [
            {"id": "classify", "type": "LLM_CALL", "user_prompt_tpl": "Classify"},
            {
                "id": "reply",
                "type": "LLM_CALL",
                "user_prompt_tpl": "[{{ classify.tags }}][{{ classify.detail.score }}][{{ classify.label }}]",
            },
        ],
        "edges": [{"source": "classify", "target": "reply", "schema_id": "labelled"}],
    }
    optional_missing = dry_run(tmp_path, graph, {"classify": {"label": "bug", "detail": {}}})
    assert optional_missing["problems"] == []  # tags and detail.score are optional in the edge's schema
    assert user_prompt(optional_missing, "reply") == "[][][bug]"

    required_missing = dry_run(tmp_path, graph, {"classify": {"label": "", "tags": ["a"]}})
    (problem,) = required_missing["problems"]  # label is required: still blocked; detail is optional
    assert problem.startswith("node 'reply': pre-check failed: user_prompt_tpl prints 'classify.label', which is empty")
