"""A graph with three versions that say which one ran, and evaluations of its versions written
straight into the store (as an evaluation run would leave them), for the promotion tests of
every surface."""

from __future__ import annotations

from typing import Any

from plait.evolve.upload import UploadMode, save_upload
from plait.store import Store
from plait.store.evaluations import EvalSet, Evaluation, NewCase

WORDS = {1: "one", 2: "two", 3: "three"}


def graph(version: int) -> dict[str, Any]:
    """The graph `labels` as its version `version` is stored: its output names the version."""
    return {
        "id": "labels",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "nodes": [{"id": "label", "type": "TRANSFORM", "transform_expr": f"({{label: '{WORDS[version]}'}})"}],
        "edges": [{"source": "label", "target": "END"}],
    }


def three_versions(store: Store) -> str:
    """Store `labels` versions 1 to 3; its id."""
    for version in WORDS:
        stored = save_upload(store, graph(version), mode=UploadMode.IMPORT).stored
        assert stored.version == version
    return stored.graph_id


def eval_set(store: Store, graph_id: str, name: str = "fixes") -> EvalSet:
    """A new revision of the set `name` with one case."""
    case = NewCase(level="node", label="corrected", source_run_id="r1", graph_version=1, ledger_version=2,
                   input={"input": {}, "upstream": {}}, original={"label": "one"}, expected={"label": "two"},
                   node_run_id="nr1", node_id="label")  # fmt: skip
    return store.evaluations.create_set(graph_id, name, [case], built_from={}, by="ana")


def evaluated(store: Store, made: EvalSet, version: int, status: str | None, *, ended: str = "completed") -> Evaluation:
    """An evaluation of `version` on `made` that ended `ended` with the verdict `status` (None:
    still running)."""
    evaluation = store.evaluations.create_evaluation(made.id, made.graph_id, version, baseline_version=None,
                                                     repetitions=1, rules={}, by="ana")  # fmt: skip
    if status is None:
        store.evaluations.finish(evaluation.id, "running")
    else:
        lines = [f"verdict: {status}", "  fail         regressions 2 > 0 allowed"] if status != "pass" else []
        store.evaluations.finish(evaluation.id, ended, verdict={"status": status, "lines": lines})
    return store.evaluations.evaluation(evaluation.id)
