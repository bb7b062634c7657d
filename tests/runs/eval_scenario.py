"""A graph people have judged, for the tests of evaluation sets: an LLM_CALL on the scripted
provider labels feedback, a HUMAN_REVIEW shows the label, a TRANSFORM passes it on to END. Seven
runs are reviewed and corrected as a person would (approvals, corrections in review, overrides,
a rerun, rollbacks), one of them made by an evaluation.

The review's out-edge schema (`loose`) accepts any label, the classifier's (`label`) only three:
a label corrected in review to another word is a case whose expected value fails its schema.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import update

from plait.engine.runner import Engine
from plait.llm.scripted import ScriptedProvider
from plait.model.enums import RunStatus
from plait.runs.corrections import Corrections
from plait.runs.start import start_run
from plait.store import Store
from plait.store.models import GRAPH_RUN

LABEL = {"type": "object", "required": ["label"],
         "properties": {"label": {"type": "string", "enum": ["bug", "question", "praise"]}}}  # fmt: skip
LOOSE = {"type": "object", "required": ["label"], "properties": {"label": {"type": "string"}}}
GRAPH = {
    "id": "triage",
    "schemas": [{"id": "label", "schema": LABEL}, {"id": "loose", "schema": LOOSE}],
    "nodes": [
        {"id": "classify", "type": "LLM_CALL", "user_prompt_tpl": "Feedback: {{ input.text }}"},
        {"id": "review", "type": "HUMAN_REVIEW"},
        {"id": "finish", "type": "TRANSFORM", "transform_expr": "({label: current.label})"},
    ],
    "edges": [
        {"source": "classify", "target": "review", "schema_id": "label"},
        {"source": "review", "target": "finish", "schema_id": "loose"},
        {"source": "finish", "target": "END", "schema_id": "loose"},
    ],
}
ANSWERS = {"responses": [
    {"node": "classify", "match": "crash", "output": {"label": "bug"}},
    {"node": "classify", "match": "\\?", "output": {"label": "question"}},
    {"node": "classify", "output": {"label": "praise"}},
]}  # fmt: skip


@dataclass
class Judged:
    """The judged runs, in the order they were judged (r1 is judged again at the end)."""

    graph_file: Path
    script: Path
    runs: dict[str, str]
    """r1..r6 (and `evaluation`, a run an evaluation made) -> run id."""
    inputs: dict[str, str]


def label(value: str, schema: str = "label") -> dict[str, Any]:
    """A stored label: the value with the schema it was written against."""
    return {"label": value, "_schema_id": schema, "_schema_version": "1.0.0"}


def judged_graph(store: Store, folder: Path) -> Judged:
    """Run the graph seven times and judge the runs (see the comments for the cases each makes)."""
    graph_file, script = folder / "triage.yaml", folder / "answers.yaml"
    graph_file.write_text(yaml.safe_dump(GRAPH, sort_keys=False))
    script.write_text(yaml.safe_dump(ANSWERS, sort_keys=False))
    provider = ScriptedProvider.from_file(script)
    inputs = {"r1": "it crashes", "r2": "how do I export?", "r3": "great app", "r4": "nice",
              "r5": "love it", "r6": "meh?", "evaluation": "crash again"}  # fmt: skip
    runs = {key: start_run(store, str(graph_file), {"text": text}) for key, text in inputs.items()}
    for run_id in runs.values():
        assert _drive(store, provider, run_id) == RunStatus.PAUSED  # waiting at the review
    person = Corrections(store, by="ann")

    def review(key: str, value: Any = None) -> None:
        done = person.review(runs[key], "review", value, approve=value is None)
        assert done.needs_run
        assert _drive(store, provider, runs[key]) == RunStatus.COMPLETED

    review("r1")  # r1 classify: approved (bug)
    review("r2", {"label": "bug"})  # r2 classify: corrected in review, question -> bug
    review("r3")
    person.override(runs["r3"], "classify", {"label": "question"}, note="a question really")
    assert person.rerun(runs["r3"], "classify").needs_run  # r3 classify: the override stands
    assert _drive(store, provider, runs["r3"]) == RunStatus.COMPLETED
    review("r4")
    person.override(runs["r4"], "classify", {"label": "bug"})
    person.override(runs["r4"], "classify", {"label": "question"})
    person.rollback(runs["r4"], "classify", None, 2)  # r4 classify: back to the first override (bug)
    review("r5")
    person.override(runs["r5"], "classify", {"label": "question"})
    person.rollback(runs["r5"], "classify", None, 1)  # r5: the override undone, the approval stands
    review("r6", {"label": "unsure"})  # r6: not a label the classifier may give: skipped
    review("evaluation", {"label": "praise"})
    with store.db.begin() as conn:  # what an evaluation's run is marked with
        conn.execute(update(GRAPH_RUN).where(GRAPH_RUN.c.id == runs["evaluation"]).values(purpose="evaluation"))
    person.override(runs["r1"], "finish", {"label": "critical bug"}, note="worse than that")
    return Judged(graph_file, script, runs, inputs)


def _drive(store: Store, provider: ScriptedProvider, run_id: str) -> RunStatus:
    async def go() -> RunStatus:
        engine = Engine(store, provider)
        try:
            return (await engine.run(run_id)).status
        finally:
            await engine.aclose()

    return asyncio.run(go())
