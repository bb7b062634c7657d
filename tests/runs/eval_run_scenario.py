"""A judged graph for the tests of running evaluations: an LLM_CALL summarises feedback, another
labels the summary (learning from corrected labels), on the scripted provider. Three runs are
judged: two labels corrected (`feature` -> `bug`, c1 before c2), one approved (a1). Later
versions change the labelling prompt (the scripted answers key on it) or the summary's schema
(`BREAKING`: its property renamed, a major change).

The cases are made here from the runs' node runs and ledger, as the set builder makes them, so
that the tests of evaluations do not depend on it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from plait.engine.runner import Engine
from plait.evolve.upload import UploadMode, save_upload
from plait.llm.scripted import ScriptedProvider
from plait.model.enums import DownstreamPolicy, RunStatus
from plait.model.output_meta import strip_meta
from plait.runs.corrections import Corrections
from plait.runs.start import start_run
from plait.store import Store, current_activations
from plait.store.evaluations import EvalSet, NewCase
from plait.testing.scripting import scripted

TEXT = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}
LABEL = {"type": "object", "required": ["label"],
         "properties": {"label": {"type": "string", "enum": ["bug", "feature", "question"]}}}  # fmt: skip
INPUTS = {"c1": "the app crash on save", "c2": "a crash at start", "a1": "please add dark mode"}
RULES = [
    {"node": "extract", "match": "Summarise briefly: .*crash on save", "output": {"summary": "crash on save"}},
    {"node": "extract", "match": "Summarise briefly: .*crash at start", "output": {"summary": "crash at start"}},
    {"node": "extract", "match": "Summarise briefly:", "output": {"summary": "wants dark mode"}},
    {"node": "extract", "match": "crash on save", "output": {"text": "crash on save"}},
    {"node": "extract", "match": "crash at start", "output": {"text": "crash at start"}},
    {"node": "extract", "output": {"text": "wants dark mode"}},
    {"node": "summarise", "match": "crash on save", "output": {"text": "crash on save"}},
    {"node": "summarise", "match": "crash at start", "output": {"text": "crash at start"}},
    {"node": "summarise", "output": {"text": "wants dark mode"}},
    {"node": "label", "match": "Label v2: .*crash", "output": {"label": "bug"}},
    {"node": "label", "match": "Label v3:", "output": {"label": "question"}},
    {"node": "label", "output": {"label": "feature"}},
]
"""Version 1 labels everything `feature`; a `Label v2:` prompt gets crashes right, `Label v3:` gets
everything wrong; a `Summarise briefly:` prompt answers in the breaking schema (`summary`); a node
renamed `summarise` summarises as `extract` does."""
BREAKING = {"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}}


def graph(
    prompt: str = "Label: {{ current.text }}",
    *,
    text: dict[str, Any] = TEXT,
    summarise: str = "Summarise: {{ input.text }}",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "id": "feedback",
        "schemas": [{"id": "text", "schema": text}, {"id": "label", "schema": LABEL}],
        "nodes": [
            {"id": "extract", "type": "LLM_CALL", "user_prompt_tpl": summarise},
            {"id": "label", "type": "LLM_CALL", "user_prompt_tpl": prompt, "use_overrides_as_fewshot": True},
        ],
        "edges": [
            {"source": "extract", "target": "label", "schema_id": "text"},
            {"source": "label", "target": "END", "schema_id": "label"},
        ],
        **extra,
    }


def provider(log: Path | None = None) -> ScriptedProvider:
    return scripted(*RULES, log=log)


def calls(log: Path) -> list[str]:
    """The nodes the provider was called for, in order."""
    return [json.loads(line)["node"] for line in log.read_text().splitlines()] if log.exists() else []


def new_version(store: Store, content: dict[str, Any]) -> int:
    return save_upload(store, content, mode=UploadMode.UPDATE, ref="feedback").stored.version


def judged(store: Store) -> tuple[str, dict[str, str], EvalSet]:
    """Version 1, its three judged runs (c1 and c2 corrected in that order, a1 approved) and the
    set `fixes` of their cases: the graph id, the runs by key, the set."""
    graph_id = save_upload(store, graph(), mode=UploadMode.CREATE).stored.graph_id
    runs = {key: start_run(store, "feedback", {"text": text}) for key, text in INPUTS.items()}
    for run_id in runs.values():
        assert drive(store, run_id, provider()) == RunStatus.COMPLETED
    person = Corrections(store, by="ann")
    for key in ("c1", "c2"):
        person.override(runs[key], "label", {"label": "bug"}, policy=DownstreamPolicy.KEEP, note="a crash is a bug")
    cases = [case_of(store, runs[key]) for key in ("c1", "c2", "a1")]
    return graph_id, runs, store.evaluations.create_set(graph_id, "fixes", cases, built_from={}, by="ann")


def case_of(store: Store, run_id: str, node_id: str = "label") -> NewCase:
    """The case of a judged node run: what it read (the run input and the upstream values at the
    versions it read), what it produced, and what a person said it should be."""
    rec = current_activations(store.runs.node_runs(run_id))[node_id]
    values = {(v.owner_id, v.version): v.value for v in store.ledger.history(run_id)}
    read = dict(rec.consumed or {})
    upstream = {owner: values[(owner, version)] for owner, version in read.items() if owner != "input"}
    expected, original = rec.effective_output, rec.output
    label = "approved" if strip_meta(expected) == strip_meta(original) else "corrected"
    return NewCase(
        level="node", label=label, source_run_id=run_id, graph_version=1,
        ledger_version=max(v for (o, v) in values if o == node_id), input={
            "input": store.runs.get(run_id).input, "upstream": upstream, "read": read},
        original=original, expected=expected, node_run_id=rec.id, node_id=node_id,
        schemas=[{"id": "label", "version": "1.0.0"}], judged_by="ann",
        judged_at=rec.override_at or rec.completed_at,
    )  # fmt: skip


def drive(store: Store, run_id: str, answers: Any) -> RunStatus:
    async def go() -> RunStatus:
        engine = Engine(store, answers)
        try:
            return (await engine.run(run_id)).status
        finally:
            await engine.aclose()

    return asyncio.run(go())
