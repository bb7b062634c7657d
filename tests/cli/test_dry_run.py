"""`plait run --dry-run`: every prompt rendered with placeholder upstream data, the checks a run
makes before a model call applied (the pre-check on the real values), budgets and providers
checked, no model called, nothing stored."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.plait_cli import bare_env, run_plait

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def plait(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_plait(*args, cwd=cwd, env=bare_env(PATH="/usr/bin:/bin"), timeout=60)


def test_every_llm_prompt_is_rendered_and_nothing_is_stored(tmp_path: Path) -> None:
    inputs = EXAMPLES / "inputs" / "feedback_triage.yaml"
    script = EXAMPLES / "scripted" / "blog_writer.yaml"
    result = plait(
        "run", str(EXAMPLES / "feedback_triage.yaml"), "--input-file", str(inputs), "--llm", f"scripted:{script}",
        "--dry-run", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    rendered = {n["node_id"]: n for n in report["nodes"] if n["messages"]}
    assert sorted(rendered) == ["answer", "classify", "file_bug"]  # every branch, not only the one a run takes
    assert rendered["classify"]["messages"][-1]["content"].startswith("Feedback: The app crashes")
    schema = rendered["classify"]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["label"]["enum"] == ["bug", "praise", "question"]
    assert rendered["classify"]["tokens_in"] > 5
    assert not (tmp_path / ".plait").exists(), "a dry run stores nothing"


def test_downstream_prompts_see_schema_shaped_placeholders(tmp_path: Path) -> None:
    graph = {
        "id": "two",
        "schemas": [{"id": "title", "schema": {"type": "object", "properties": {"title": {"type": "string"},
                     "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}}}}],
        "nodes": [
            {"id": "first", "type": "LLM_CALL", "user_prompt_tpl": "Name it"},
            {"id": "second", "type": "LLM_CALL", "user_prompt_tpl": "Title {{ first.title }} tags {{ first.tags }}"},
        ],
        "edges": [{"source": "first", "target": "second", "schema_id": "title"}],
    }  # fmt: skip
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(graph))
    script = EXAMPLES / "scripted" / "blog_writer.yaml"
    result = plait("run", str(path), "--llm", f"scripted:{script}", "--dry-run", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    second = next(n for n in json.loads(result.stdout)["nodes"] if n["node_id"] == "second")
    assert second["messages"][-1]["content"] == "Title <first.title> tags a"  # a list: one item per line


def test_budget_and_provider_problems_are_reported_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "answers.yaml").write_text("responses:\n  - {text: x}\n")
    (tmp_path / "plait.toml").write_text(
        '[[providers]]\nid = "paid"\nkind = "scripted"\nfile = "answers.yaml"\n'
        'models = [{ name = "m", price_in = 1000.0, price_out = 1000.0 }]\n[roles]\nchat = "paid/m"\n'
    )
    graph = {
        "id": "costly",
        "max_cost_usd": 0.01,
        "nodes": [
            {"id": "a", "type": "LLM_CALL", "user_prompt_tpl": "go", "token_budget_output": 100},
            {"id": "b", "type": "LLM_CALL", "user_prompt_tpl": "go", "model_role": "vision"},
        ],
        "edges": [{"source": "a", "target": "b"}],
    }
    path = tmp_path / "costly.yaml"
    path.write_text(yaml.safe_dump(graph))
    result = plait("run", str(path), "--config", str(tmp_path / "plait.toml"), "--dry-run", "--json", cwd=tmp_path)
    assert result.returncode == 2
    report = json.loads(result.stdout)
    a = next(n for n in report["nodes"] if n["node_id"] == "a")
    assert a["cost_usd"] == 0.108  # (8 prompt tokens: "go" and the chat framing, + 100) x $0.001
    assert any("over max_cost_usd = 0.01" in p for p in report["problems"])
    assert any(p.startswith("node 'b': the role 'vision' is not configured") for p in report["problems"])
    assert "no model was called" not in result.stdout  # --json: the JSON only


def test_given_upstream_outputs_replace_the_placeholders(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream.yaml"
    upstream.write_text("classify: {label: question}\nfile_bug: {title: Real title, severity: high}\n")
    inputs = EXAMPLES / "inputs" / "feedback_triage.yaml"
    script = EXAMPLES / "scripted" / "blog_writer.yaml"
    args = ["run", str(EXAMPLES / "feedback_triage.yaml"), "--input-file", str(inputs), "--llm", f"scripted:{script}"]
    result = plait(*args, "--dry-run", "--upstream", str(upstream), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    nodes = {n["node_id"]: n for n in json.loads(result.stdout)["nodes"]}
    assert nodes["classify"]["output"] == {"label": "question"}
    assert nodes["join"]["output"]["file_bug"] == {"title": "Real title", "severity": "high"}
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("nope: {}\n")
    bad = plait(*args, "--dry-run", "--upstream", str(unknown), cwd=tmp_path)
    assert bad.returncode == 2
    assert "--upstream names no node 'nope'" in bad.stderr
    without = plait(*args, "--upstream", str(upstream), cwd=tmp_path)
    assert without.returncode == 2
    assert "--upstream only applies with --dry-run" in without.stderr


def graph_file(tmp_path: Path, graph: dict[str, Any]) -> str:
    path = tmp_path / f"{graph['id']}.yaml"
    path.write_text(yaml.safe_dump(graph))
    return str(path)


def script_file(tmp_path: Path) -> str:
    path = tmp_path / "answers.yaml"
    path.write_text("responses:\n  - {output: {title: Tea}}\n")
    return f"scripted:{path}"


TOPIC = {
    "id": "topic",
    "input_schema": {"type": "object"},  # says nothing of topic: nothing lets it be missing
    "nodes": [{"id": "write", "type": "LLM_CALL", "user_prompt_tpl": "A title about {{ input.topic }}"}],
}


def test_a_prompt_printing_a_missing_input_fails_the_dry_run_as_it_fails_the_run(tmp_path: Path) -> None:
    graph, llm = graph_file(tmp_path, TOPIC), script_file(tmp_path)
    dry = plait("run", graph, "--llm", llm, "--dry-run", "--json", cwd=tmp_path)
    assert dry.returncode == 2, dry.stderr
    (problem,) = json.loads(dry.stdout)["problems"]
    assert problem.startswith("node 'write': pre-check failed: user_prompt_tpl prints 'input.topic', which is missing")
    assert "give it a value in the run input" in problem
    assert f"plait: {problem}" in dry.stderr
    assert not (tmp_path / ".plait").exists(), "a dry run stores nothing"

    real = plait("run", graph, "--llm", llm, "--json", cwd=tmp_path)  # what the dry run foretold
    assert real.returncode == 1
    assert "precheck_failed" in real.stdout + real.stderr

    given = plait("run", graph, "-i", "topic=tea", "--llm", llm, "--dry-run", "--json", cwd=tmp_path)
    assert given.returncode == 0, given.stderr
    assert json.loads(given.stdout)["problems"] == []


def test_an_upstream_output_that_breaks_its_edge_schema_fails_the_dry_run(tmp_path: Path) -> None:
    graph = graph_file(tmp_path, {
        "id": "typed",
        "schemas": [{"id": "title", "schema": {"type": "object", "properties": {"title": {"type": "string"}},
                                               "required": ["title"]}}],
        "nodes": [
            {"id": "first", "type": "LLM_CALL", "user_prompt_tpl": "Name it"},
            {"id": "second", "type": "LLM_CALL", "user_prompt_tpl": "Polish {{ first.title }}"},
        ],
        "edges": [{"source": "first", "target": "second", "schema_id": "title"}],
    })  # fmt: skip
    upstream = tmp_path / "upstream.yaml"
    upstream.write_text("first: {title: 42}\n")
    args = ["run", graph, "--llm", script_file(tmp_path), "--dry-run", "--json"]
    result = plait(*args, "--upstream", str(upstream), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem.startswith("node 'second': pre-check failed: the input from 'first' breaks schema 'title': title:")
    assert "correct the upstream output given for 'first'" in problem
    upstream.write_text("first: {title: Tea}\n")
    assert plait(*args, "--upstream", str(upstream), cwd=tmp_path).returncode == 0


def test_what_only_a_placeholder_would_fail_is_no_problem(tmp_path: Path) -> None:
    """Placeholders stand for outputs the run does not have yet: one that breaks its own schema
    (too long), a field of a node without a schema, a second array item, a node that switches
    the pre-check off: a clean graph dry-runs with exit 0."""
    graph = graph_file(tmp_path, {
        "id": "clean",
        "input_schema": {"type": "object", "properties": {"topic": {"type": "string"}, "note": {"type": "string"}}},
        "schemas": [{"id": "short", "schema": {"type": "object", "properties": {
            "code": {"type": "string", "maxLength": 2}, "tags": {"type": "array", "items": {"type": "string"}}}}}],
        "nodes": [
            {"id": "first", "type": "LLM_CALL", "user_prompt_tpl": "Code for {{ input.topic }}"},
            {"id": "shape", "type": "TRANSFORM", "transform_expr": "({reply: 'x'})"},
            {"id": "second", "type": "LLM_CALL",
             "user_prompt_tpl": "{{ first.code }} {{ first.tags[1] }} {{ shape.reply }}"},
            {"id": "third", "type": "LLM_CALL", "user_prompt_tpl": "{{ input.note }}", "checks": {"pre": False}},
        ],
        "edges": [
            {"source": "first", "target": "second", "schema_id": "short"},
            {"source": "shape", "target": "second"},
            {"source": "second", "target": "third"},
        ],
    })  # fmt: skip
    result = plait("run", graph, "-i", "topic=tea", "--llm", script_file(tmp_path), "--dry-run", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["problems"] == []
    second = next(n for n in report["nodes"] if n["node_id"] == "second")
    assert second["messages"][-1]["content"] == "<first.code>  "  # a placeholder has no tags[1], "<shape>" no reply
