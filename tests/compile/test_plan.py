"""The compiler's plan is what the engine executes by: parsed once, never again by the engine."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from plait.compile import compile_file
from plait.compile import templates as template_parsing
from plait.compile.plan import plan_graph
from plait.compile.template_types import TemplateError
from plait.engine.runner import Engine, RunOutcome
from plait.llm.scripted import ScriptedProvider
from plait.model.enums import RunStatus
from plait.runs.start import start_run
from plait.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_plan_holds_every_prompt_parsed_and_what_each_node_reads() -> None:
    result = compile_file(EXAMPLES / "feedback_triage.yaml")
    plan = result.plan
    assert plan is not None
    assert plan.topology.order[0] == "classify"
    for node in result.expanded.nodes:  # type: ignore[union-attr]
        for text in (getattr(node, "system_prompt", None), getattr(node, "user_prompt_tpl", None)):
            if text:
                assert plan.nodes[node.id].template(text).source
    reads = {node_id: set(p.reads) for node_id, p in plan.nodes.items()}
    assert "input" in reads["classify"]  # its prompt names the run input
    assert plan.nodes["classify"].template("{{ something.else }}").refs[0].root == "something"  # a repair's fix
    with pytest.raises(TemplateError, match="syntax"):
        plan.nodes["classify"].template("{{ unclosed")


def test_an_invalid_graph_has_no_plan(tmp_path: Path) -> None:
    broken = tmp_path / "g.yaml"
    broken.write_text(yaml.safe_dump({"id": "g", "nodes": [{"id": "a", "type": "NOPE"}], "edges": []}))
    assert compile_file(broken).plan is None


def test_the_engine_parses_no_template_once_the_plan_is_built(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = EXAMPLES / "feedback_triage.yaml"
    inputs = yaml.safe_load((EXAMPLES / "inputs" / "feedback_triage.yaml").read_text())
    provider = ScriptedProvider.from_file(str(EXAMPLES / "scripted" / "feedback_triage.yaml"))
    run_id = start_run(store, str(graph), inputs)

    def no_parsing(text: str) -> None:
        raise AssertionError(f"the engine parsed a template at run time: {text[:40]!r}")

    async def go() -> RunOutcome:
        engine = Engine(store, provider)
        record = store.runs.get(run_id)
        engine.compiled_for(record.graph_id, record.graph_version)  # the plan, built once per version
        template_parsing._parse.cache_clear()
        monkeypatch.setattr(template_parsing, "_parse", no_parsing)
        try:
            return await engine.run(run_id)
        finally:
            await engine.aclose()

    outcome = asyncio.run(go())
    assert outcome.status == RunStatus.COMPLETED, outcome.error


def test_plan_graph_is_the_same_for_the_compiler_and_the_engine() -> None:
    result = compile_file(EXAMPLES / "video_chapters.yaml")
    assert result.expanded is not None
    again = plan_graph(result.expanded)
    assert result.plan is not None
    assert {k: v.reads for k, v in again.nodes.items()} == {k: v.reads for k, v in result.plan.nodes.items()}
    assert again.topology.order == result.plan.topology.order
